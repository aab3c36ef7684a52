#!/bin/sh
# cli_params: parameter files and overrides through the program: help,
# effective parameters, the banner, and errors that end the whole job.
. "$(dirname "$0")/lib.sh"

expect_ok "$FS" help params
grep -q "max_seq_len" "$T/out" && grep -q "hstu|sasrec" "$T/out" || fail "help params incomplete"

printf '[data]\npath = d.h5   # the data\n[model]\ntype = sasrec\n' > "$T/good.in"
expect_ok "$FS" params "$T/good.in" train.lr=0.01 model.dim=64
grep -q "^lr = 0.01    # from command line" "$T/out" || fail "override not in dump"
grep -q "^type = sasrec    # from $T/good.in:4" "$T/out" || fail "file value not in dump"
grep -q "BLAS: OpenBLAS .*kernels " "$T/out" || fail "banner lacks the BLAS kernel set"
head -n 1 "$T/out" | grep -q "^freescale " || fail "banner is not first"
# the dump is itself a valid parameter file with the same values
sed '1d' "$T/out" > "$T/again.in"
expect_ok "$FS" params "$T/again.in"
sed '1d' "$T/out" | sed 's/ *#.*//' > "$T/a"
"$FS" params "$T/good.in" train.lr=0.01 model.dim=64 | sed '1d; s/ *#.*//' > "$T/b"
cmp -s "$T/a" "$T/b" || fail "dump of the dump differs"

for f in "$TOP_SRCDIR"/input/*.in; do
    expect_ok "$FS" params "$f"
done

printf '[train]\nlr = 1e-3\nlrr = 1\n' > "$T/unknown.in"
expect_error "unknown.in:3: unknown key 'lrr' in section [train]; did you mean 'train.lr'?" \
    "$FS" params "$T/unknown.in"
printf '[model]\ndim = fifty\n' > "$T/badval.in"
expect_error "badval.in:2: model.dim = 'fifty': not an integer" "$FS" params "$T/badval.in"
printf '[model]\ndropout = 2\n' > "$T/range.in"
expect_error "range.in:2: model.dropout = '2': out of range [0, 0.95]" "$FS" params "$T/range.in"
printf '[model]\ndim = 8\ndim = 9\n' > "$T/dup.in"
expect_error "dup.in:3: duplicate key 'dim' in section [model] (first set at line 2)" \
    "$FS" params "$T/dup.in"
printf '[model\ndim = 8\n' > "$T/hdr.in"
expect_error "hdr.in:1: unterminated section header '[model'" "$FS" params "$T/hdr.in"
expect_error "command line: unknown key 'lrr' in section [train]" \
    "$FS" params "$T/good.in" train.lrr=1
expect_error "cannot open parameter file" "$FS" params "$T/none.in"
expect_error "unknown command 'trian'" "$FS" trian
expect_error "usage: freescale" "$FS"

# several ranks: rank 0's error ends the whole job (no hang)
if [ -n "${MPIRUN:-}" ] && [ -x "$MPIRUN" ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
    expect_error "error [rank 0]: $T/dup.in:3: duplicate key" \
        timeout 60 "$MPIRUN" -np 3 "$FS" params "$T/dup.in"
    expect_ok timeout 60 "$MPIRUN" -np 3 "$FS" params "$T/good.in" model.heads=5
    [ "$(grep -c '^heads = 5' "$T/out")" = 1 ] || fail "effective parameters not printed once"
    grep -q "3 ranks" "$T/out" || fail "banner lacks the rank count"
else
    echo "note: mpirun not found, multi-rank part skipped"
fi
finish
