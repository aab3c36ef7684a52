#!/bin/sh
# cli_ckpt_mpio: checkpoints written by every rank through MPI-IO
# (output.checkpoint_write = collective, the default) and read back by
# every rank its share, on a table of many chunks moved in many rounds
# (debug.checkpoint_block = 1: one chunk per rank and round):
#   - one state written at P = 1, and at P = 4 (embedding groups of 2), at
#     P = 3 and by the gathered path after resuming it with no step: the
#     files are equal dataset by dataset (values, shapes, types, chunks,
#     checksums) and attribute by attribute, bit for bit (h5py);
#   - written at P = 4 and at P = 1 by their own runs: equal to float
#     rounding (the same global batches on any P; 1e-3 relative, 1e-4
#     absolute: a tenth of one Adam step of lr 1e-3; deterministic);
#   - the P = 4 checkpoint resumed at P = 3: losses equal to the
#     uninterrupted P = 4 run;
#   - a full file system when the ranks write the rows (a small tmpfs,
#     mounted here; skipped without the privilege): the job ends with "No
#     space left on device" and the path, no temporary file left.
. "$(dirname "$0")/lib.sh"
need_mpirun
have_h5py || { echo "SKIP: no /usr/bin/python3 with h5py"; exit 77; }
IN="$TOP_SRCDIR/input/tiny.in"
# 30000 items of 32 values with Adam: the weights in 4 chunks, the state in 8
"$FS" data gen --users 64 --items 30000 --length uniform:5,40 --timestamps -o "$T/d.h5" \
    >/dev/null || { fail "data gen"; finish; }
COMMON="data.path=$T/d.h5 model.dim=32 embedding.optimizer=adam model.dropout=0
    train.final_eval=off train.log_every=1 debug.checkpoint_block=1"
train() { np=$1; shift; timeout 600 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

# same FILE_A FILE_B NAME [TOL]: every dataset and attribute (but 'params',
# which names the run's own paths, and 'written_ns', the wall clock) equal; TOL: relative tolerance of floats
same() {
    if "$PY" - "$1" "$2" "${4:-0}" > "$T/same" 2>&1 <<'PYEOF'; then pass "$3: $(cat "$T/same")"; else fail "$3: $(head -c 600 "$T/same")"; fi
import sys, h5py, numpy as np
a, b, tol = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), float(sys.argv[3])
na, nb = [], []
a.visit(na.append)
b.visit(nb.append)
assert sorted(na) == sorted(nb), "objects differ: %s" % sorted(set(na) ^ set(nb))
n = 0
for name in na:
    x, y = a[name], b[name]
    if not isinstance(x, h5py.Dataset):
        continue
    n += 1
    assert (x.shape, x.dtype, x.chunks, x.fletcher32) == (y.shape, y.dtype, y.chunks, y.fletcher32), name
    u, v = x[()], y[()]
    if tol == 0 or u.dtype.kind != "f":
        assert np.array_equal(u, v), "%s: values differ" % name
    else:
        assert np.allclose(u, v, rtol=tol, atol=tol * 0.1), "%s: worst %g" % (name, np.abs(u - v).max())
keys = (set(a.attrs) | set(b.attrs)) - {"params", "written_ns"}
for k in keys:
    assert k in a.attrs and k in b.attrs and a.attrs[k] == b.attrs[k], "attribute %s" % k
assert a["emb/items/weight"].shape == (30001, 32) and a["emb/items/state"].shape == (30001, 64)
print("%d datasets, %d attributes equal%s" % (n, len(keys), " to %g" % tol if tol else ""))
PYEOF
}

expect_ok train 1 train.max_steps=4 output.checkpoint_dir="$T/c1"
expect_ok train 4 train.max_steps=4 output.checkpoint_dir="$T/c4"
grep -q "^checkpoint $T/c4/ckpt-4.h5 (.* GB in .* s" "$T/out" && pass "the write is reported" ||
    fail "no checkpoint line with its cost: $(grep checkpoint "$T/out" | tail -n 1)"
same "$T/c1/ckpt-4.h5" "$T/c4/ckpt-4.h5" "P = 4 and P = 1, each from its own run" 1e-3

# one state, written on other rank counts and groups, and by the gathered path
expect_ok train 4 train.max_steps=4 train.resume="$T/c1/ckpt-4.h5" parallel.embedding_group=2 \
    output.checkpoint_dir="$T/r4"
grep -q "resumed from $T/c1/ckpt-4.h5 at step 4 (read .* GB" "$T/out" && pass "the read is reported" ||
    fail "no resume line with its cost: $(grep resumed "$T/out")"
same "$T/c1/ckpt-4.h5" "$T/r4/ckpt-4.h5" "written at P = 1 = read and written at P = 4, groups of 2"
expect_ok train 3 train.max_steps=4 train.resume="$T/c4/ckpt-4.h5" output.checkpoint_dir="$T/r3"
same "$T/c4/ckpt-4.h5" "$T/r3/ckpt-4.h5" "written at P = 4 = read and written at P = 3"
expect_ok train 4 train.max_steps=4 train.resume="$T/c4/ckpt-4.h5" output.checkpoint_dir="$T/g4" \
    output.checkpoint_write=gathered
same "$T/c4/ckpt-4.h5" "$T/g4/ckpt-4.h5" "collective = gathered (P = 4)"

# the P = 4 checkpoint resumed at P = 3 = the uninterrupted P = 4 run
expect_ok train 4 train.max_steps=8 output.metrics="$T/straight.jsonl"
expect_ok train 3 train.max_steps=8 train.resume="$T/c4/ckpt-4.h5" output.metrics="$T/r3.jsonl"
same_losses "$T/straight.jsonl" "$T/r3.jsonl" "P = 4 checkpoint resumed at P = 3 vs straight" 4

# a full file system while every rank writes the rows: the header (rank 0)
# fits in 1 MiB, the rows (11 MB) do not
M="$T/full"
mkdir -p "$M"
if mount -t tmpfs -o size=1m none "$M" 2>/dev/null; then
    trap 'umount "$M" 2>/dev/null; rm -rf "$T"' EXIT
    expect_error "checkpoint $M/ck/ckpt-2.h5: cannot write $M/ck/ckpt-2.h5.tmp." \
        train 4 train.max_steps=2 output.checkpoint_dir="$M/ck"
    grep -q "No space left on device" "$T/err" && pass "the errno text is named" ||
        fail "no 'No space left on device': $(head -c 600 "$T/err")"
    grep -q "H5Dopen2\|H5Dwrite" "$T/err" && pass "it failed in the collective part" ||
        fail "not in the collective part: $(head -c 600 "$T/err")"
    no_file "$M/ck/ckpt-2.h5"
    umount "$M"
else
    echo "SKIP (part): cannot mount a tmpfs (needs root): the full-disk test"
fi
finish
