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

# a list over indented lines (inih's 198 characters a line): the same value as
# on one line; the dump wraps it and reads back; a number cannot go on; the
# joined value has a limit
X1="ua:user*artist:20000, ub:user*album:50000, uh:user*hour:36000, ih:item*hour:50000"
X2="ah:artist*hour:1200, uo:user*is_organic:3000, uah:user*artist*hour:50000"
printf '[data]\npath = d.h5\n[features]\ncross = %s,\n    %s\n' "$X1" "$X2" > "$T/cont.in"
expect_ok "$FS" params "$T/cont.in"
sed '1d' "$T/out" > "$T/cont2.in"
expect_ok "$FS" params "$T/cont.in" "features.cross=$X1, $X2"
sed '1d; s/ *#.*//' "$T/out" > "$T/b"
sed 's/ *#.*//' "$T/cont2.in" > "$T/a"
cmp -s "$T/a" "$T/b" && pass "a list over two lines = the same list on one" ||
    fail "a list over two lines differs: $(diff "$T/a" "$T/b" | head -4)"
grep -q "^    ah:artist" "$T/cont2.in" && pass "the dump wraps the long list" ||
    fail "the dump does not wrap: $(grep -A1 '^cross' "$T/cont2.in")"
expect_ok "$FS" params "$T/cont2.in"
sed '1d; s/ *#.*//' "$T/out" | cmp -s - "$T/b" && pass "the wrapped dump reads back" ||
    fail "the wrapped dump reads back otherwise"
printf '[model]\ndim = 32\n  heads = 2\n' > "$T/indent.in"
expect_error "indent.in:3: an indented line continues 'dim' of [model] (line 2), which is not a list" \
    "$FS" params "$T/indent.in"
{ printf '[features]\ncross = a:user*item:9'; i=0
  while [ $i -lt 12 ]; do printf ',\n    %0100d:user*item:9' $i; i=$((i + 1)); done; echo; } > "$T/huge.in"
expect_error "huge.in:11: 'cross' of [features] (from line 2) is longer than 1023 characters" \
    "$FS" params "$T/huge.in"

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
# a check's error names where its parameter was set, as the parse errors do
printf '[model]\ndim = 16\nheads = 3\n' > "$T/heads.in"
expect_error "heads.in:3: model.heads = 3 must divide model.dim = 16" "$FS" params "$T/heads.in" \
    data.path="$T/none.h5"
expect_error "cannot open parameter file" "$FS" params "$T/none.in"
expect_error "unknown command 'trian'" "$FS" trian
expect_error "usage: freescale" "$FS"

# serial commands never print MPI's text; an error is the first line (but
# for warnings, e.g. mallopt's under the sanitizers)
nowarn() { grep -v '^freescale: warning: ' "$1"; }
for cmd in "params $T/dup.in" "params $T/good.in model.heads=3" "help nothing" \
    "data stats $T/none.h5" "plan $T/none.in --batch-per-rank 4"; do
    # shellcheck disable=SC2086
    "$FS" $cmd >"$T/out" 2>"$T/err" && fail "$cmd succeeded"
    if grep -qi "mpi_abort\|open mpi\|mpirun" "$T/out" "$T/err"; then fail "$cmd printed MPI text"
    elif [ -s "$T/out" ] || [ "$(nowarn "$T/err" | wc -l)" != 1 ]; then
        fail "$cmd: more than its error line: $(head -c 300 "$T/out" "$T/err")"
    else pass "$cmd: one error line, no MPI text"; fi
done

# 'freescale params' refuses what train refuses, with the same message,
# before anything else is printed (train: once, on every rank's behalf)
"$FS" data gen --users 16 --items 50 --length uniform:5,20 -o "$T/d.h5" >/dev/null || fail "data gen"
mkdir -p "$T/ml" && printf 'userId,movieId,rating,timestamp\n1,2,3.0,4\n' > "$T/ml/ratings.csv"
while IFS='|' read -r setting want; do
    expect_error "$want" "$FS" params "$TOP_SRCDIR/input/tiny.in" data.path="$T/d.h5" $setting
    nowarn "$T/err" | head -n 1 | grep -qF "freescale: error: " || fail "params $setting: not the first line"
    nowarn "$T/err" > "$T/params.err"
    if [ -n "${MPIRUN:-}" ] && [ -x "$MPIRUN" ]; then
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
            timeout 300 "$MPIRUN" -np 2 "$FS" train "$TOP_SRCDIR/input/tiny.in" data.path="$T/d.h5" \
            $setting </dev/null >"$T/out" 2>"$T/err" && fail "train $setting succeeded"
        [ "$(grep -c "freescale: error" "$T/err")" = 1 ] && [ "$(nowarn "$T/err" | head -n 1)" = "$(cat "$T/params.err")" ] &&
            ! grep -q "MPI_ABORT" "$T/err" && [ ! -s "$T/out" ] &&
            pass "train $setting: the same message, once, first, no MPI_ABORT" ||
            fail "train $setting: $(head -c 400 "$T/out" "$T/err")"
    fi
done <<EOF2
model.heads=3|command line: model.heads = 3 must divide model.dim = 16
train.keep_best=on|train.keep_best = on needs output.checkpoint_dir
debug.split_chunks=65|debug.split_chunks = '65': out of range [0, 64]
model.layers=40|model.layers = 40: hstu takes 0 to 25 layers
data.path=$T/ml|data.path: $T/ml is a directory, not a dataset: make one of its ratings with 'freescale data import --format csv $T/ml/ratings.csv
data.path=$T/ml/ratings.csv|is not an HDF5 file (a text file, a CSV of ratings?): make a dataset of it with 'freescale data import --format csv
device.type=cpu parallel.transport=kernel|parallel.transport = kernel: the cpu backend has no CUDA IPC; use parallel.transport = mpi or auto
train.follow=on|train.follow needs train.schedule = stream
train.follow_timeout=5x|command line: train.follow_timeout = '5x': not a duration: seconds (3600) or a number with a unit s, m, h, d or w (30s, 10m, 6h, 1d, 2w)
train.schedule=stream data.window=0.5|command line: data.window = '0.5': not a whole number of seconds
embedding.dynamic=on embedding.evict=ttl:abc|command line: embedding.evict = ttl:abc: ttl:S needs a whole number S of steps, and 'abc' is not a number
train.schedule=stream data.window=1d embedding.dynamic=on output.checkpoint_delta_every=2|command line: output.checkpoint_delta_every = 2: train.schedule = stream writes a full checkpoint after each window
train.follow_timeout=-1|train.follow_timeout = '-1': must be a duration >= 0 (such as 3600, 30m, 6h, 1d)
train.follow=on train.follow_timeout=2w|train.follow needs train.schedule = stream
train.shared_negatives=4 train.loss=bce|train.shared_negatives = 4: only for train.loss = softmax
EOF2
expect_error "train.shared_negatives = 8 does not combine with parallel.split_long = auto" \
    "$FS" params "$TOP_SRCDIR/input/tiny.in" data.path="$T/d.h5" train.shared_negatives=8 \
    parallel.split_long=auto

# several ranks: rank 0's error ends the whole job (no hang), printed once
if [ -n "${MPIRUN:-}" ] && [ -x "$MPIRUN" ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
    expect_error "freescale: error: $T/dup.in:3: duplicate key" \
        timeout 300 "$MPIRUN" -np 3 "$FS" params "$T/dup.in"
    [ "$(grep -c "duplicate key" "$T/err")" = 1 ] && ! grep -q MPI_ABORT "$T/err" &&
        pass "3 ranks: the error once, no MPI_ABORT" || fail "3 ranks: $(head -c 400 "$T/err")"
    # mpirun -q: nothing but the message
    expect_error "duplicate key" timeout 300 "$MPIRUN" -q -np 3 "$FS" params "$T/dup.in"
    [ "$(nowarn "$T/err" | wc -l)" = 1 ] && pass "mpirun -q: the message alone" ||
        fail "mpirun -q: $(head -c 400 "$T/err")"
    expect_ok timeout 300 "$MPIRUN" -np 3 "$FS" params "$T/good.in" model.heads=5
    [ "$(grep -c '^heads = 5' "$T/out")" = 1 ] || fail "effective parameters not printed once"
    grep -q "3 ranks" "$T/out" || fail "banner lacks the rank count"
    # errors of the set-up after the parameters (a dataset's features, a
    # shared device, the ranking task's columns): once, first, no MPI_ABORT
    "$FS" data gen --users 16 --items 30 --length uniform:3,8 --item-feature genre:5 \
        -o "$T/f.h5" >/dev/null || fail "data gen"
    while IFS='|' read -r setting want; do
        # shellcheck disable=SC2086
        timeout 300 "$MPIRUN" -np 2 "$FS" train "$T/good.in" data.path="$T/f.h5" model.dim=16 \
            $setting </dev/null >"$T/out" 2>"$T/err" && fail "train $setting succeeded"
        [ "$(grep -c "freescale: error" "$T/err")" = 1 ] &&
            nowarn "$T/err" | head -n 1 | grep -qF "freescale: error: $want" &&
            ! grep -q "MPI_ABORT" "$T/err" && [ ! -s "$T/out" ] &&
            pass "train $setting: the error once, first, no MPI_ABORT" ||
            fail "train $setting: $(head -c 400 "$T/out" "$T/err")"
    done <<EOF2
features.item=nosuch|features.item = nosuch: $T/f.h5 has no /items/nosuch
device.type=fake|device: node rank 0 would share its device
train.task=ranking train.tasks=like:binary:rating>=4|train.tasks: task like: $T/f.h5 has no /events/rating
EOF2
    # the effective parameters: in the metrics file; on the terminal with --verbose
    expect_ok "$FS" train "$T/good.in" data.path="$T/f.h5" model.dim=16 train.max_steps=1 \
        output.metrics="$T/m.jsonl"
    ! grep -q "effective parameters" "$T/out" && head -n 1 "$T/m.jsonl" |
        grep -q '^{"event":"params","params":{"data.path":".*"model.dim":"16",' &&
        pass "train: the parameters in the metrics file, not on the terminal" ||
        fail "train: parameters: $(head -c 300 "$T/out" "$T/m.jsonl")"
    expect_ok "$FS" train "$T/good.in" data.path="$T/f.h5" model.dim=16 train.max_steps=1 --verbose
    grep -q "^dim = 16    # from command line" "$T/out" || fail "train --verbose: no parameters"
    expect_ok "$FS" train --help
    grep -q "'freescale help params'" "$T/out" || fail "train --help: no pointer to help params"
else
    echo "note: mpirun not found, multi-rank part skipped"
fi
# a test stopped by SIGTERM or SIGINT (timeout, Ctrl-C) removes its scratch
# directory as one that ends does (tests/lib.sh: the signal exits, the exit
# trap cleans up); its exit code says the signal
mkdir "$T/k"
for sig in TERM INT; do
    cat > "$T/killed.sh" <<EOF
. "$TOP_SRCDIR/tests/lib.sh"
sleep 60 &
echo "\$T \$!" > "$T/k.$sig.tmp" && mv "$T/k.$sig.tmp" "$T/k.$sig"
wait
EOF
    # env: a background job starts with SIGINT ignored, which no trap can catch
    TMPDIR="$T/k" FREESCALE="$FS" env --default-signal=INT sh "$T/killed.sh" &
    pid=$!
    n=0
    while [ ! -f "$T/k.$sig" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
    dir= sleeper=
    read -r dir sleeper < "$T/k.$sig" || fail "SIG$sig: the killed test did not start"
    kill -"$sig" "$pid"
    wait "$pid"
    rc=$?
    [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null
    want=$([ "$sig" = TERM ] && echo 143 || echo 130)
    [ -n "$dir" ] && [ ! -e "$dir" ] && [ "$rc" = "$want" ] &&
        pass "SIG$sig: the scratch directory removed, exit code $rc" ||
        fail "SIG$sig: exit code $rc (want $want), left: $(ls -d "$T"/k/fs-test.* 2>/dev/null)"
done
finish
