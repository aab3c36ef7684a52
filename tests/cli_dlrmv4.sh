#!/bin/sh
# cli_dlrmv4: input/dlrmv4-small.in (MLPerf DLRMv4's recipe at a small size,
# doc/dlrmv4.md) as shipped, on a small Yambda-shaped stream (data gen
# --yambda, 6 days):
#   - every window line has the model's listen_plus AUC and the online
#     baseline's; the history's pools and the seven crosses are in the log;
#   - P = 1 and 2: the same window metrics (losses 1e-6 relative, AUCs to
#     5e-3 as tests/cli_stream.sh: a rank statistic moves where the
#     all-reduce's rounding swaps two all but tied scores);
#   - a run stopped after window 1 (data.stream_end) at P = 2 and resumed
#     at P = 1 ends as the uninterrupted P = 1 run.
. "$(dirname "$0")/lib.sh"
need_mpirun
have_h5py || { echo "SKIP: $PY cannot import h5py and numpy"; exit 77; }
IN=$TOP_SRCDIR/input/dlrmv4-small.in
"$FS" data gen --yambda --days 6 --users 80 --tracks 300 --median-length 60 --seed 4 \
    -o "$T/y.h5" >/dev/null 2>"$T/gen.err" || { fail "data gen --yambda: $(cat "$T/gen.err")"; finish; }
COMMON="data.path=$T/y.h5 train.log_every=5"
run p1 1
run p2 2
grep -q "histories from 3 pools, the last 80 events of each" "$T/p1.out" ||
    fail "no pools line: $(grep -i pool "$T/p1.out" | head -2)"
[ "$(grep -c 'a hashed cross, on its item' "$T/p1.out")" -eq 7 ] && pass "seven crosses" ||
    fail "crosses: $(grep -c 'a hashed cross' "$T/p1.out") lines"
grep -q "^window 4 \[.*eval listen_plus AUC [0-9.]* (baseline [0-9.]*)" "$T/p2.out" &&
    pass "window 4: the model's AUC beside the online baseline's" ||
    fail "no window 4 line: $(grep '^window' "$T/p2.out" | tail -2)"

# windows A B LO HI: windows LO..HI of two metrics files agree
windows() {
    "$PY" - "$@" <<'EOF' > "$T/cmp.out" 2>&1
import json, sys
a, b, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def load(p):
    return {o["window"]: o for o in map(json.loads, open(p)) if o.get("event") == "window"}
A, B = load(a), load(b)
worst = [0.0, 0.0]
for k in range(lo, hi + 1):
    if k not in A or k not in B:
        sys.exit("window %d missing" % k)
    for key in ("steps", "train_users", "train_events", "window_events", "eval_events"):
        if A[k][key] != B[k][key]:
            sys.exit("window %d: %s %s vs %s" % (k, key, A[k][key], B[k][key]))
    r = abs(A[k]["loss"] - B[k]["loss"]) / max(abs(B[k]["loss"]), 1e-12)
    d = max(abs(A[k][x] - B[k][x]) for x in ("listen_plus.auc", "baseline.listen_plus.auc"))
    worst = [max(worst[0], r), max(worst[1], d)]
    if r > 1e-6 or d > 5e-3:
        sys.exit("window %d: loss %r vs %r, AUC %r vs %r" % (k, A[k]["loss"], B[k]["loss"],
                 A[k]["listen_plus.auc"], B[k]["listen_plus.auc"]))
print("worst loss %.3g relative, AUC %.3g" % tuple(worst))
EOF
}
windows "$T/p1.jsonl" "$T/p2.jsonl" 0 4 && pass "P = 2 as P = 1, windows 0 .. 4 ($(cat "$T/cmp.out"))" ||
    fail "P = 2 vs P = 1: $(cat "$T/cmp.out")"

# --- stop after window 1 at P = 2, resume at P = 1 ---------------------------------
run part 2 "output.checkpoint_dir=$T/ck" data.stream_end=1970-01-04
last=$(sed -n 's/.*"event":"window","window":\([0-9]*\),.*/\1/p' "$T/part.jsonl" | tail -1)
[ "$last" = 1 ] && pass "data.stream_end = 1970-01-04: windows 0 and 1" ||
    fail "data.stream_end: the last window is '$last', not 1"
run rest 1 "output.checkpoint_dir=$T/ck" train.resume=auto
grep -q "stream: resuming after window 1" "$T/rest.out" ||
    fail "no resume line: $(grep stream "$T/rest.out" | head -2)"
windows "$T/p1.jsonl" "$T/rest.jsonl" 2 4 &&
    pass "stopped after window 1 at P = 2, resumed at P = 1: as the uninterrupted run ($(cat "$T/cmp.out"))" ||
    fail "resumed: $(cat "$T/cmp.out")"
finish
