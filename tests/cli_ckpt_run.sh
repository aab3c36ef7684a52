#!/bin/sh
# cli_ckpt_run: a checkpoint directory belongs to one run (src/ckpt/ckpt_run.h),
# and a resumed run reports what the uninterrupted one would.
#   - another run's directory is refused before training, naming its
#     checkpoints and the way out; output.checkpoint_dir = a file is refused;
#   - the preemption example in a directory that also holds an earlier,
#     different run's later steps (output.shared_dir=on): resume=auto takes
#     the preempted run's checkpoint, says what it skipped, and the losses
#     are the uninterrupted run's; the other run's files are untouched, a
#     step they share gets its own name;
#   - keep_checkpoints=2 in that directory deletes only the run's own files;
#   - train.shared_negatives is part of the identity: a resume with another
#     value (or a checkpoint without it, 0) refused naming the checkpoint and
#     the key; the same value resumes to the uninterrupted run's losses;
#   - the final checkpoint is written after the final validation (its
#     best_epoch is the one reported); a run stopped at an epoch's end
#     before its validation, resumed, reports the uninterrupted run's
#     validations (each once), best epoch and test metrics;
#   - the checkpoint size said before training is within 25% of the file
#     written, for a dynamic table and a stream of day files;
#   - an explicit resume (train.resume=PATH) of another run's checkpoint
#     (another seed; shared_negatives 4 there, none here; a line on one
#     side only, a dynamic table's, the stream's, one of a later build,
#     unless its value is what its absence means: the parameter's default)
#     is refused, naming the file and the difference; a checkpoint without a
#     line whose absence means this run's value resumes;
#   - an explicit resume refused leaves no directory it created.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 device.type=cpu train.log_every=1"
train() { ranks=$1; shift; timeout 300 "$MPIRUN" -np "$ranks" "$FS" train "$IN" $COMMON "$@" </dev/null; }

# an earlier, different run: ckpt-4, ckpt-8, ckpt-12 (model.dim=24)
expect_ok train 2 model.dim=24 train.epochs=3 train.checkpoint_every=4 \
    output.checkpoint_dir="$T/ck"
cksum "$T"/ck/ckpt-4.h5 "$T"/ck/ckpt-8.h5 "$T"/ck/ckpt-12.h5 > "$T/other.sum"

# a fresh run into it: refused by name, before training
expect_error "output.checkpoint_dir = $T/ck holds 3 checkpoints of another run" \
    train 2 train.max_steps=10 output.checkpoint_dir="$T/ck"
grep -q "ckpt-12.h5" "$T/err" && grep -q "model.dim: 24 there, 16 here" "$T/err" &&
    grep -q "output.shared_dir=on" "$T/err" && pass "the refusal names the files, the difference, the way out" ||
    fail "refusal: $(cat "$T/err")"
grep -q "^epoch" "$T/out" && fail "trained before refusing"
expect_error "output.checkpoint_dir = $T/ck holds 3 checkpoints of another run" \
    train 2 train.resume=auto output.checkpoint_dir="$T/ck"
# a file as the directory: refused before training
: > "$T/afile"
expect_error "output.checkpoint_dir = $T/afile is a file, not a directory" \
    train 2 train.max_steps=10 output.checkpoint_dir="$T/afile"
grep -q "^epoch" "$T/out" && fail "trained before refusing the file"

# the uninterrupted run (its own directory), 3 epochs of 4 steps, validated each
E="train.epochs=3 train.eval_every=1"
expect_ok train 2 $E output.metrics="$T/u.jsonl" output.checkpoint_dir="$T/cu"
best_u=$(grep -o 'best validation NDCG@10 [0-9.]* at epoch [0-9]*' "$T/out")
test_u=$(grep '"split":"test"' "$T/u.jsonl" | grep -o '"hr@1".*')
[ -n "$best_u" ] && [ -n "$test_u" ] || fail "no summary in the uninterrupted run"

# the preemption example: stopped by a signal during step 6, shared directory
S="output.checkpoint_dir=$T/ck output.shared_dir=on output.keep_checkpoints=2"
train 2 $E $S train.checkpoint_every=4 debug.signal_rank=1:6 \
    output.metrics="$T/p.jsonl" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 75 ] && pass "stopped by a signal: mpirun's exit code 75" || fail "exit code $rc: $(tail -c 300 "$T/err")"
grep -q "stopped by signal 15 after step 6" "$T/out" && pass "stopped after step 6" ||
    fail "no stop after step 6: $(tail -n 3 "$T/out")"
[ -f "$T/ck/ckpt-4-"*.h5 ] && pass "step 4, which the other run also has, got its own name" ||
    fail "no ckpt-4-RUNID.h5: $(ls "$T/ck")"
expect_ok train 2 $E $S train.checkpoint_every=4 train.resume=auto output.metrics="$T/p.jsonl"
grep -q "train.resume = auto: $T/ck/ckpt-6.h5, step 6: this run's newest complete checkpoint" "$T/out" &&
    grep -q "skipped: ckpt-" "$T/out" && pass "resume=auto took the preempted run's ckpt-6.h5" ||
    fail "resume=auto: $(grep -i resum "$T/out")"
same_losses "$T/u.jsonl" "$T/p.jsonl" "preempted and resumed vs uninterrupted"
cksum "$T"/ck/ckpt-4.h5 "$T"/ck/ckpt-8.h5 "$T"/ck/ckpt-12.h5 > "$T/after.sum"
cmp -s "$T/other.sum" "$T/after.sum" && pass "the other run's checkpoints untouched" ||
    fail "the other run's checkpoints changed: $(cat "$T/after.sum")"
mine=$(ls "$T/ck" | grep -v '^ckpt-\(4\|8\|12\)\.h5$' | tr '\n' ' ')
[ "$mine" = "ckpt-12-$(ls "$T/ck" | sed -n 's/^ckpt-12-\(.*\)\.h5$/\1/p').h5 ckpt-8-$(ls "$T/ck" | sed -n 's/^ckpt-8-\(.*\)\.h5$/\1/p').h5 " ] &&
    pass "keep_checkpoints=2 kept this run's two newest only: $mine" || fail "left: $mine"

# train.shared_negatives is part of the identity (a line when on; a
# checkpoint without it: 0): a resume with another value is refused by the
# checkpoint's name and the key; the same value resumes to the uninterrupted
# run's losses
SN="train.shared_negatives=4 train.epochs=2"
expect_ok train 2 $SN output.metrics="$T/snu.jsonl"
expect_ok train 2 $SN train.max_steps=4 output.checkpoint_dir="$T/sn" output.metrics="$T/snp.jsonl"
expect_error "output.checkpoint_dir = $T/sn holds 1 checkpoint of another run: ckpt-4.h5 (train.shared_negatives: 4 there, 0 here)" \
    train 1 train.epochs=2 train.resume=auto output.checkpoint_dir="$T/sn"
expect_error "(train.shared_negatives: 4 there, 8 here)" \
    train 1 train.epochs=2 train.shared_negatives=8 train.resume=auto output.checkpoint_dir="$T/sn"
expect_error "(train.shared_negatives: 0 there, 4 here)" \
    train 1 $SN train.resume=auto output.checkpoint_dir="$T/cu"
expect_error "train.resume = $T/sn/ckpt-4.h5 is a checkpoint of another run (train.shared_negatives: 4 there, 0 here)" \
    train 1 train.epochs=2 train.resume="$T/sn/ckpt-4.h5"
expect_ok train 2 $SN train.resume=auto output.checkpoint_dir="$T/sn" output.metrics="$T/snp.jsonl"
grep -q "train.resume = auto: $T/sn/ckpt-4.h5, step 4" "$T/out" &&
    pass "shared_negatives = 4 resumed its own ckpt-4.h5" || fail "resume: $(grep -i resum "$T/out")"
same_losses "$T/snu.jsonl" "$T/snp.jsonl" "shared_negatives = 4: resumed vs uninterrupted" 0 0

# the final checkpoint records the final validation; resumed runs report alike
for f in "$T/cu/ckpt-12.h5"; do
    if have_h5py; then
        got=$("$PY" -c "import h5py,sys; print(int(h5py.File(sys.argv[1],'r').attrs['best_epoch']))" "$f")
        [ "epoch $got" = "${best_u##* at }" ] && pass "final checkpoint's best_epoch $got" ||
            fail "final checkpoint's best_epoch $got, reported ${best_u##* at }"
    fi
done
# copies of ckpt-12 with another identity (another run_id, as a checkpoint
# written before a line was part of the identity has): without the
# embedding.subspace_basis line (its absence means the default, this run's
# value: taken), without model.dim (the default 50, 16 here: refused), with
# a line this build does not know (refused)
ck12="$T/cu/ckpt-12.h5"
if have_h5py; then
    "$PY" - "$ck12" "$T" <<'PYEOF' && ck12="$T/old.h5" || fail "h5py: could not write the copies"
import h5py, shutil, sys
src, T = sys.argv[1:]
for name, old, new in (("old", "embedding.subspace_basis = random\n", ""),
                       ("nodim", "model.dim = 16\n", ""),
                       ("later", "model.dim = 16\n", "model.dim = 16\nmodel.later = 1\n")):
    shutil.copy(src, "%s/%s.h5" % (T, name))
    with h5py.File("%s/%s.h5" % (T, name), "r+") as f:
        p = f.attrs["run_params"]
        p = p.decode() if isinstance(p, bytes) else p
        assert old in p, (name, p)
        f.attrs["run_params"] = p.replace(old, new)
        f.attrs["run_id"] = "0123456789abcdef"
PYEOF
    expect_error "train.resume = $T/nodim.h5 is a checkpoint of another run (model.dim: 50 there, 16 here)" \
        train 1 $E train.resume="$T/nodim.h5"
    expect_error "train.resume = $T/later.h5 is a checkpoint of another run (model.later: 1 there, (not set) here)" \
        train 1 $E train.resume="$T/later.h5"
fi
expect_ok train 2 $E train.resume="$ck12" output.metrics="$T/again.jsonl"
grep -qF "$best_u" "$T/out" && pass "resumed at the end ($ck12): $best_u" ||
    fail "resumed at the end: $(grep done "$T/out") vs $best_u"
# an explicit resume keeps the run's identity as resume=auto does: another
# seed (or loss, negatives, ...) is refused before training, naming the
# file and what differs
expect_error "train.resume = $T/cu/ckpt-12.h5 is a checkpoint of another run (train.seed: " \
    train 2 $E train.seed=7 train.resume="$T/cu/ckpt-12.h5"
grep -q "train.seed: [0-9]* there, 7 here" "$T/err" && pass "the refusal names the seed" ||
    fail "explicit resume with another seed: $(cat "$T/err")"
grep -q "^epoch\|^step" "$T/out" && fail "trained before refusing the explicit resume"
# stopped at the end of epoch 2, before its validation
train 2 $E debug.signal_rank=0:8 output.checkpoint_dir="$T/ce" output.metrics="$T/e.jsonl" \
    >"$T/out" 2>&1
expect_ok train 2 $E train.resume=auto output.checkpoint_dir="$T/ce" output.metrics="$T/e.jsonl"
grep -qF "$best_u" "$T/out" && pass "stopped before a validation, resumed: $best_u" ||
    fail "stopped before a validation: $(grep done "$T/out") vs $best_u"
evals() { grep '"split":"val"' "$1" | grep -o '"epoch":[0-9]*.*"ndcg@10":[^,]*' | sed 's/"loss":[^,]*,//'; }
evals "$T/u.jsonl" > "$T/ev.u"; evals "$T/e.jsonl" > "$T/ev.e"
[ -s "$T/ev.u" ] && cmp -s "$T/ev.u" "$T/ev.e" && pass "the same validations, each once" ||
    fail "validations differ: $(diff "$T/ev.u" "$T/ev.e" | head -5)"
[ "$(grep '"split":"test"' "$T/e.jsonl" | grep -o '"hr@1".*')" = "$test_u" ] &&
    pass "the same test metrics" || fail "test metrics differ"

# the size said before training and the checkpoint written, within 25%: a
# dynamic item table (counted at the dataset's distinct ids, not its
# initial pool) and a stream of day files (at the union of their ids)
near() { # NAME OUTPUT FILE: the start-up line's size vs FILE's
    said=$(grep -o '^checkpoint: [0-9.]* [kMG]*B each' "$2" | awk '{v = $2; u = $3;
        m = u == "kB" ? 1e3 : u == "MB" ? 1e6 : u == "GB" ? 1e9 : 1; printf "%.0f", v * m}')
    wrote=$(stat -c %s "$3" 2>/dev/null)
    if [ -n "$said" ] && [ -n "$wrote" ] &&
        awk -v a="$said" -v b="$wrote" 'BEGIN { r = a / b; exit !(r >= 0.75 && r <= 1.25) }'; then
        pass "$1: said $said bytes, wrote $wrote"
    else
        fail "$1: said '$said', wrote '$wrote' ($(grep '^checkpoint: ' "$2"))"
    fi
}
expect_ok train 2 embedding.dynamic=on train.epochs=1 output.checkpoint_dir="$T/dyn"
near "a dynamic table" "$T/out" "$(ls -t "$T"/dyn/ckpt-*.h5 | head -1)"
grep -q "dynamic table 'items' at the dataset's [0-9]* distinct ids, at most" "$T/out" &&
    pass "the line says what it assumes" || fail "assumption: $(grep '^checkpoint: ' "$T/out")"
# a line on one side only that is not what its absence means: refused by
# the identity, naming the file and the line (a dynamic table's, the
# stream's; before, an epochs checkpoint resumed as a stream silently)
dyn=$(ls -t "$T"/dyn/ckpt-*.h5 | head -1)
expect_error "train.resume = $dyn is a checkpoint of another run (embedding.dynamic: on there, off here)" \
    train 1 train.epochs=1 train.resume="$dyn"
expect_error "train.resume = $T/cu/ckpt-12.h5 is a checkpoint of another run (train.schedule: epochs there, stream here; data.window: (not set) there, 1d here)" \
    train 1 $E train.schedule=stream data.window=1d train.resume="$T/cu/ckpt-12.h5"
"$FS" data gen --stream --days 4 --users 120 --items 150 --new-items-per-day 30 --seed 4 \
    -o "$T/s.h5" --split-days "$T/days" >/dev/null || fail "data gen --stream"
expect_ok timeout 300 "$MPIRUN" -np 2 "$FS" train "$IN" device.type=cpu "data.path=$T/days/day-*.h5" \
    embedding.dynamic=on train.schedule=stream data.window=1d output.checkpoint_dir="$T/dd"
near "day files" "$T/out" "$(ls -t "$T"/dd/ckpt-*.h5 | head -1)"
grep -q "at the [0-9]* distinct ids of the 4 files present now, at most" "$T/out" &&
    pass "the stream's line says what it assumes" || fail "assumption: $(grep '^checkpoint: ' "$T/out")"

# an explicit resume refused leaves no checkpoint directory it created
expect_error "train.resume = $T/none.h5" train 2 train.resume="$T/none.h5" \
    output.checkpoint_dir="$T/made/ck"
[ ! -e "$T/made" ] && pass "the refused resume left no directory" || fail "$T/made was left"
finish
