#!/bin/sh
# cli_ckpt_fail: checkpoints that fail cleanly and survive damage.
#   - output.keep_checkpoints=2 leaves exactly the two newest of 5;
#   - a bit flipped in the newest checkpoint's table: train.resume=auto
#     skips it, says so, resumes from the previous one, and the losses then
#     equal an uninterrupted run's; train.resume=PATH to it is refused,
#     naming the dataset; a wrong format or a NaN weight is refused too;
#   - output.checkpoint_dir on a full file system (a small tmpfs, mounted
#     here; skipped without the privilege): "No space left on device" with
#     the path, no temporary file left, the earlier checkpoint resumable.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 model.dropout=0 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

# retention
expect_ok train 2 train.max_steps=5 train.checkpoint_every=1 output.checkpoint_dir="$T/keep" \
    output.keep_checkpoints=2
got=$(ls "$T/keep" | tr '\n' ' ')
[ "$got" = "ckpt-4.h5 ckpt-5.h5 " ] && pass "keep_checkpoints=2: $got" ||
    fail "keep_checkpoints=2 left: $got"

# damage: a bit flipped inside the newest checkpoint's item table
expect_ok train 2 train.max_steps=8 output.metrics="$T/straight.jsonl"
expect_ok train 2 train.max_steps=4 train.checkpoint_every=2 output.checkpoint_dir="$T/ck"
if have_h5py; then
    "$PY" - "$T/ck/ckpt-4.h5" <<'PYEOF' || fail "could not flip a bit"
import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    info = f["emb/items/weight"].id.get_chunk_info(0)
with open(sys.argv[1], "r+b") as g:
    g.seek(info.byte_offset + 1000)
    b = g.read(1)
    g.seek(info.byte_offset + 1000)
    g.write(bytes([b[0] ^ 0x10]))
PYEOF
    cp "$T/ck/ckpt-4.h5" "$T/flipped.h5"
    expect_error "train.resume = $T/flipped.h5: dataset /emb/items/weight" \
        train 2 train.resume="$T/flipped.h5" train.max_steps=8
    grep -q "checksum mismatch" "$T/err" || fail "no checksum mismatch named: $(cat "$T/err")"
    expect_ok train 2 train.max_steps=8 train.resume=auto output.checkpoint_dir="$T/ck" \
        output.metrics="$T/resumed.jsonl"
    grep -q "skipping a damaged checkpoint: $T/ck/ckpt-4.h5: dataset /emb/items/weight" "$T/err" &&
        pass "auto resume says it skips the damaged checkpoint" ||
        fail "no word of the damaged checkpoint: $(head -c 400 "$T/err")"
    grep -q "resumed from $T/ck/ckpt-2.h5 at step 2" "$T/out" && pass "resumed from ckpt-2" ||
        fail "not resumed from ckpt-2: $(grep resumed "$T/out")"
    same_losses "$T/straight.jsonl" "$T/resumed.jsonl" "resumed past a damaged checkpoint" 2

    # a wrong format, a NaN weight: refused by name
    cp "$T/ck/ckpt-2.h5" "$T/fmt.h5"
    cp "$T/ck/ckpt-2.h5" "$T/nan.h5"
    "$PY" - "$T/fmt.h5" "$T/nan.h5" <<'PYEOF' || fail "could not edit the checkpoints"
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    f.attrs["format"] = "freescale-seq"
with h5py.File(sys.argv[2], "r+") as f:
    w = f["emb/items/weight"]
    w[7, 3] = float("nan")
PYEOF
    expect_error "attribute 'format' is 'freescale-seq', expected 'freescale-ckpt'" \
        train 1 train.resume="$T/fmt.h5"
    expect_error "dataset /emb/items/weight: value nan at row 7 is not finite" \
        train 1 train.resume="$T/nan.h5"
fi

# a full file system
M="$T/full"
mkdir -p "$M"
if mount -t tmpfs -o size=512k none "$M" 2>/dev/null; then
    trap 'umount "$M" 2>/dev/null; rm -rf "$T"' EXIT
    expect_ok train 2 train.max_steps=2 output.checkpoint_dir="$M/ck"
    avail=$(df -k --output=avail "$M" | tail -n 1)
    dd if=/dev/zero of="$M/fill" bs=1k count=$((avail - 24)) 2>/dev/null
    expect_error "checkpoint $M/ck/ckpt-4.h5: cannot write $M/ck/ckpt-4.h5.tmp." \
        train 2 train.max_steps=4 train.resume=auto output.checkpoint_dir="$M/ck"
    grep -q "No space left on device" "$T/err" && pass "the errno text is named" ||
        fail "no 'No space left on device': $(cat "$T/err")"
    no_file "$M/ck/ckpt-4.h5"
    rm -f "$M/fill"
    expect_ok train 2 train.max_steps=4 train.resume=auto output.checkpoint_dir="$M/ck"
    grep -q "resumed from $M/ck/ckpt-2.h5 at step 2" "$T/out" &&
        pass "the earlier checkpoint resumed" || fail "ckpt-2 not resumed"
    umount "$M"
else
    echo "SKIP (part): cannot mount a tmpfs (needs root): the full-disk test"
fi
finish
