#!/bin/sh
# cli_ckpt_fresh: a fresh run (train.resume empty) never overwrites the
# checkpoints another start wrote into its directory (src/ckpt/ckpt_run.h).
#   - a second fresh run with another learning rate (outside the run
#     identity, so the same run by identity) into the first run's
#     directory is refused before training, naming the files and the ways
#     out; the first run's files are byte for byte what they were;
#   - the same with output.shared_dir=on; train.keep_best's best.h5 counts
#     too, and another run's best.h5 in a shared directory refuses
#     keep_best;
#   - train.resume=auto still continues the first run there;
#   - a file named like a checkpoint whose identity cannot be read is
#     written beside (ckpt-STEP-RUNID.h5), never over.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 device.type=cpu train.log_every=1 train.final_eval=off"
train() { timeout 300 "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON "$@" </dev/null; }

# the first run: 4 steps an epoch, checkpoints at 4 and 8
expect_ok train train.epochs=2 train.checkpoint_every=4 output.checkpoint_dir="$T/ck"
ls "$T"/ck/ckpt-4.h5 "$T"/ck/ckpt-8.h5 >/dev/null && pass "the first run wrote ckpt-4, ckpt-8" ||
    fail "first run's files: $(ls "$T/ck")"
cksum "$T"/ck/* > "$T/first.sum"

# the second fresh run, another learning rate: refused, nothing trained
for extra in "" "output.shared_dir=on"; do
    expect_error "output.checkpoint_dir = $T/ck holds 2 checkpoints of an earlier start with this run's identity: " \
        train train.epochs=2 train.checkpoint_every=4 train.lr=3e-3 $extra \
        output.checkpoint_dir="$T/ck"
    grep -q "ckpt-8.h5" "$T/err" && grep -q "ckpt-4.h5" "$T/err" &&
        grep -q "continue that run with train.resume=auto, or give this run another output.checkpoint_dir, or move them away" "$T/err" &&
        pass "the refusal names the files and the ways out ($extra)" ||
        fail "refusal: $(cat "$T/err")"
    grep -q "^epoch\|\"step\"" "$T/out" && fail "trained before refusing ($extra)"
done
cksum "$T"/ck/* | cmp -s - "$T/first.sum" && pass "the first run's files are unchanged" ||
    fail "the first run's files changed"

# resume = auto continues the first run there (one more epoch)
expect_ok train train.epochs=3 train.checkpoint_every=4 train.resume=auto \
    output.checkpoint_dir="$T/ck"
grep -q "train.resume = auto: $T/ck/ckpt-8.h5, step 8" "$T/out" && [ -f "$T/ck/ckpt-12.h5" ] &&
    pass "train.resume=auto continues the first run" ||
    fail "resume: $(grep -i resume "$T/out" "$T/err" | head -3)"

# best.h5 alone counts: a run's best (validated after epoch 1), its
# final checkpoint removed
expect_ok train train.epochs=2 train.eval_every=1 train.keep_best=on output.checkpoint_dir="$T/kb"
rm -f "$T"/kb/ckpt-*.h5
cksum "$T/kb/best.h5" > "$T/best.sum" || fail "no best.h5: $(ls "$T/kb")"
expect_error "holds 1 checkpoint of an earlier start with this run's identity: best.h5;" \
    train train.epochs=2 train.eval_every=1 train.keep_best=on train.lr=5e-3 \
    output.checkpoint_dir="$T/kb"
# another run (model.dim) in that directory, shared: keep_best refused,
# without it the run writes beside
expect_error "output.checkpoint_dir = $T/kb: best.h5 is another run's (model.dim: 16 there, 24 here" \
    train train.epochs=2 train.eval_every=1 train.keep_best=on model.dim=24 \
    output.shared_dir=on output.checkpoint_dir="$T/kb"
expect_ok train train.epochs=1 model.dim=24 output.shared_dir=on output.checkpoint_dir="$T/kb"
cksum "$T/kb/best.h5" | cmp -s - "$T/best.sum" && pass "best.h5 unchanged" ||
    fail "best.h5 changed"

# a damaged file where a checkpoint goes: written beside, left alone
mkdir -p "$T/dm"
printf 'not a checkpoint' > "$T/dm/ckpt-4.h5"
expect_ok train train.epochs=1 output.checkpoint_dir="$T/dm"
[ "$(cat "$T/dm/ckpt-4.h5")" = "not a checkpoint" ] && ls "$T"/dm/ckpt-4-*.h5 >/dev/null 2>&1 &&
    pass "a damaged ckpt-4.h5 is left alone, the run's written beside" ||
    fail "damaged: $(ls "$T/dm")"
finish
