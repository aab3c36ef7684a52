#!/bin/sh
# cli_ckpt_bad: checkpoints that are well-formed HDF5 but not shaped the way
# freescale writes them (tests/ckpt_craft.py: an array where a scalar
# belongs for every attribute read, the wrong class or size, negative and
# overflowing steps and counts, a wrong format, datasets of the wrong rank,
# class or shape, non-finite values, a missing checksum) are each refused
# with a message naming the file and the object. Under the sanitizer build
# (.ci/run) any memory error fails the test.
. "$(dirname "$0")/lib.sh"
need_mpirun
have_h5py || { echo "SKIP: no /usr/bin/python3 with h5py"; exit 77; }
tiny_data
COMMON="data.path=$T/tiny.h5 model.dropout=0 train.final_eval=off train.log_every=1"
train() { timeout 300 "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON "$@"; }
# the refusals: one process without mpirun (MPI's singleton start, a third
# of mpirun's start-up time per case)
train1() { timeout 300 "$FS" train "$IN" $COMMON "$@"; }
expect_ok train train.max_steps=2 output.checkpoint_dir="$T/ck"
mkdir -p "$T/bad"
"$PY" "$TOP_SRCDIR/tests/ckpt_craft.py" "$T/ck/ckpt-2.h5" "$T/bad" > "$T/cases" ||
    { fail "ckpt_craft.py"; finish; }
n=0
while IFS="$(printf '\t')" read -r name want; do
    n=$((n + 1))
    expect_error "$want" train1 train.max_steps=3 train.resume="$T/bad/$name.h5" </dev/null
    grep -qF "$T/bad/$name.h5" "$T/err" || fail "$name: the file is not named"
    grep -q "Sanitizer\|runtime error" "$T/err" && fail "$name: sanitizer report"
done < "$T/cases"
[ $n -ge 40 ] && pass "$n crafted checkpoints" || fail "only $n crafted checkpoints"
finish
