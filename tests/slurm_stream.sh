#!/bin/sh
# slurm_stream: scripts/slurm/stream.sbatch on a private single-node Slurm
# (tests/slurm_lib.sh): a synthetic stream of day files (data gen --stream
# --labels --split-days: raw ids, a dynamic item table, data.path a glob)
# trained as two daily jobs into one run directory (each first delivers
# its day's file into the glob's folder through FS_NEW_DATA; the first
# trains up to day 1, the second resumes and trains day 2) gives the
# windows of one job that trained both days, bit for bit (2 tasks each); the run directory keeps at most
# FS_KEEP checkpoints; a job whose FS_NEW_DATA fails trains nothing. Skips
# (77) only when the Slurm packages are missing; no wall-time limits.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
slurm_test_setup
"$FS" data gen --stream --days 3 --users 300 --items 400 --new-items-per-day 40 --drift 0.1 \
    --labels --seed 3 --split-days all >/dev/null || { fail "data gen --stream"; finish; }
mkdir days
# deliver DAY: the day's file renamed into the stream's folder (what an
# import writing under a temporary name does)
deliver() { echo "cp all/day-000$1.h5 days/.day-000$1.h5 && mv days/.day-000$1.h5 days/day-000$1.h5"; }
cat > s.in <<'IN'
[data]
path = days/day-*.h5
max_seq_len = 20
window = 12h
stream_start = 2020-01-01
[model]
type = hstu
dim = 8
layers = 1
heads = 1
dropout = 0
actions = sum
head = 16
[train]
task = ranking
tasks = like:binary:like
schedule = stream
batch_size = 16
log_every = 1000
[embedding]
optimizer = adam
dynamic = on
evict = ttl:50
IN
day() { # RUN_DIR END [ENV...]: one job, waited for; its state in $T/state
    dir=$1 end=$2; shift 2
    job=$(export FS_RUN_DIR="$dir" FS_STREAM_END="$end" FS_KEEP=2 FS_NEW_DATA=
        for kv in "$@"; do export "$kv"; done
        slurm_submit --gpus-per-task=0 --ntasks-per-node=2 --time=0 "$SB/stream.sbatch" s.in)
    [ -n "$job" ] || { fail "sbatch stream.sbatch ($dir, $end)"; return 1; }
    slurm_wait "$job" || fail "job $job did not finish"
    echo "job $job ($dir up to $end): $(cat "$T/state")"
}
windows() { # METRICS: window, loss and like.auc of every window line
    sed -n 's/.*"event":"window","window":\([0-9]*\),.*"loss":\([^,]*\),.*"like.auc":\([^,}]*\).*/\1 \2 \3/p' "$1"
}
day "$T/runs/daily" 2020-01-02 FS_NEW_DATA="cd $T && $(deliver 0)"
[ "$(cat "$T/state")" = COMPLETED ] && pass "day 1 COMPLETED" || fail "day 1: $(cat "$T/state"; tail -n 5 "$T/runs/daily/log")"
[ -e "$T/days/day-0000.h5" ] && grep -q "new data: cd" "$T/runs/daily/script.log" &&
    pass "day 1 took in its new data first" || fail "FS_NEW_DATA did not run: $(cat "$T/runs/daily/script.log")"
day "$T/runs/daily" 2020-01-03 FS_NEW_DATA="cd $T && $(deliver 1)"
[ "$(cat "$T/state")" = COMPLETED ] && pass "day 2 COMPLETED" || fail "day 2: $(cat "$T/state"; tail -n 5 "$T/runs/daily/log")"
grep -q "stream: resuming after window 1" "$T/runs/daily/log" && pass "day 2 resumed after window 1" ||
    fail "day 2 did not resume after window 1: $(grep -i 'stream\|resum' "$T/runs/daily/log" | tail -n 3)"
day "$T/runs/once" 2020-01-03
[ -e "$T/days/day-0001.h5" ] || fail "day 2 did not deliver its file"
windows "$T/runs/daily/metrics.jsonl" > daily.txt
windows "$T/runs/once/metrics.jsonl" > once.txt
[ "$(wc -l < once.txt)" = 4 ] && cmp -s daily.txt once.txt &&
    pass "two daily jobs = one job over both days (windows 0 .. 3, loss and AUC identical)" ||
    fail "daily jobs differ from one job: $(diff daily.txt once.txt | head -n 4 | tr '\n' ' ')"
n=$(ls "$T/runs/daily/checkpoints" | grep -c '^ckpt-')
[ "$n" -le 2 ] && [ "$n" -ge 1 ] && pass "FS_KEEP=2: $n checkpoints kept" ||
    fail "checkpoints kept: $(ls "$T/runs/daily/checkpoints")"
before=$(grep -c '"event":"window"' "$T/runs/daily/metrics.jsonl")
day "$T/runs/daily" 2020-01-04 FS_NEW_DATA="echo no such day >&2; false"
[ "$(cat "$T/state")" = FAILED ] && [ "$(grep -c '"event":"window"' "$T/runs/daily/metrics.jsonl")" = "$before" ] &&
    pass "a failed FS_NEW_DATA: FAILED, nothing trained" ||
    fail "failed FS_NEW_DATA: state $(cat "$T/state"), windows $before -> $(grep -c '"event":"window"' "$T/runs/daily/metrics.jsonl")"
finish
