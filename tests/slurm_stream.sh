#!/bin/sh
# slurm_stream: the real scripts/slurm/stream.sbatch on the private
# single-node Slurm (tests/slurm_lib.sh). Day files of data gen --stream:
# day 0 there; a job whose FS_STREAM_IMPORT puts day 1 in place trains
# windows 0 and 1 (1d windows on days), the next job, submitted after it
# with day 2's import, resumes and trains window 2; their windows (2 tasks
# each) equal one job's over the three days, exactly; FS_STREAM_KEEP = 2
# leaves 2 checkpoints. No time limit (--time=0); the waits are
# slurm_lib's (hang guards, never assertions on time).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_test_setup
"$FS" data gen --stream --days 3 --users 60 --items 80 --new-items-per-day 8 --labels --seed 4 \
    --split-days D >/dev/null 2>"$T/gen.err" || { fail "data gen: $(cat "$T/gen.err")"; finish; }
mkdir W && cp D/day-0000.h5 W/
P="device.type=cpu train.task=ranking train.tasks=like:binary:like data.window=1d
data.stream_start=2020-01-01 train.batch_size=8 model.layers=1 model.dim=16 embedding.dynamic=on"
day() { # RUN DATA IMPORT: one stream job, waited for
    # shellcheck disable=SC2086
    job=$(FS_RUN_DIR="$T/runs/$1" FS_STREAM_IMPORT="$3" FS_STREAM_KEEP=2 slurm_submit \
        --gpus-per-task=0 --ntasks-per-node=2 --time=0 "$SB/stream.sbatch" "$IN" "data.path=$2" $P)
    [ -n "$job" ] || { fail "sbatch stream.sbatch ($1)"; return 1; }
    slurm_wait "$job" || { fail "job $job did not finish"; return 1; }
    [ "$(cat "$T/state")" = COMPLETED ] && pass "$1: job $job COMPLETED" ||
        fail "$1: job $job ended $(cat "$T/state"): $(tail -n 20 "$T/runs/$1/log" 2>/dev/null)"
}
day s 'W/day-*.h5' 'cp D/day-0001.h5 W/.d1.tmp && mv W/.d1.tmp W/day-0001.h5'
day s 'W/day-*.h5' 'cp D/day-0002.h5 W/.d2.tmp && mv W/.d2.tmp W/day-0002.h5'
day all 'D/day-*.h5' ''
grep -q "resuming after window 1" runs/s/log && pass "the second day's job resumed after window 1" ||
    fail "no resume in runs/s/log: $(grep -E 'stream|resum' runs/s/log)"
n=$(ls runs/s/checkpoints | grep -c '^ckpt-.*\.h5$')
[ "$n" = 2 ] && pass "FS_STREAM_KEEP=2: 2 checkpoints" || fail "checkpoints: $(ls runs/s/checkpoints)"
/usr/bin/python3 - runs/all/metrics.jsonl runs/s/metrics.jsonl <<'PYEOF' > "$T/cmp.out" 2>&1 &&
import json, sys
def load(p):
    return [json.loads(l) for l in open(p) if '"event":"window"' in l]
A, B = load(sys.argv[1]), load(sys.argv[2])
if [a["window"] for a in A] != [0, 1, 2] or [b["window"] for b in B] != [0, 1, 2]:
    sys.exit("windows %s in one job, %s in two" % ([a["window"] for a in A], [b["window"] for b in B]))
for a, b in zip(A, B):
    for k in ("loss", "train_events", "eval_events", "like.auc", "like.ne"):
        if a[k] != b[k]:
            sys.exit("window %d %s: %r vs %r" % (a["window"], k, a[k], b[k]))
print("windows 0 .. 2 identical")
PYEOF
    pass "two days' jobs = one job over both: $(cat "$T/cmp.out")" || fail "two days vs one job: $(cat "$T/cmp.out")"
finish
