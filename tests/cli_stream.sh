#!/bin/sh
# cli_stream: train.schedule = stream (doc/training.md, "Streaming").
#   - causal: every event at or after window K's end poisoned (item ids
#     and labels replaced, in a copy of the file) leaves windows 0 .. K's
#     evaluation and training identical (losses, metrics, counts: exactly),
#     and changes a later window;
#   - the per-window losses and metrics at P = 1, 2, 4 agree (the dense
#     all-reduce's order: 1e-4 relative, as the other P tests), and with
#     parallel.split_long (every sequence in 2 chunks at P = 2);
#   - the final means: the model's and the baseline's over the same windows
#     (those with both figures), which the line names;
#   - a run stopped after window K (data.stream_end) and resumed on another
#     P (train.resume = auto) ends as the uninterrupted run (also with
#     model.bias, model.recency and model.factors, which are causal too); another
#     data.window cannot resume it;
#   - the fake device's windows are the CPU's, exactly;
#   - bad input: data.window zero or negative or not a duration, a
#     stream_end not after the start, a dataset without timestamps, the
#     window parameters without the stream schedule, retrieval's full
#     softmax, parallel.split_long with retrieval, output.checkpoint_delta_every;
#   - a ranking stream's progress lines carry mlperf_gflops (doc/ranking.md);
#   - retrieval (HR@K, NDCG@K against the item table, the online popularity
#     baseline, absent in window 0): causal, P = 3, the fake device.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in
PY=/usr/bin/python3

# 60 users over ~13 days, each with a burst of events at its own pace
awk 'BEGIN { srand(17); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 60; u++) { n = 6 + int(rand() * 30); t = 1700000000 + int(rand() * 5 * 86400)
        for (k = 0; k < n; k++) { t += int(rand() * 40000)
            printf "%d,%d,%.1f,%d\n", u, 1 + int(rand() * rand() * 80), 0.5 + int(rand() * 10) / 2, t } } }' \
    > "$T/r.csv"
"$FS" data import --format movielens "$T/r.csv" -o "$T/r.h5" >/dev/null || { fail "import"; finish; }
S="train.task=ranking train.tasks=like:binary:rating>=4 train.schedule=stream data.window=1d
train.batch_size=8 train.log_every=100"
run() {
    name=$1 np=$2 data=$3; shift 3
    # shellcheck disable=SC2086
    "$MPIRUN" -np "$np" "$FS" train "$IN" "data.path=$data" $S "output.metrics=$T/$name.jsonl" "$@" \
        >"$T/$name.out" 2>&1 || fail "train $name: $(tail -5 "$T/$name.out")"
}
# windows A B FROM TO TOL [ATOL]: windows FROM .. TO of metrics files A and
# B agree (TOL relative, 0: exactly; the AUCs to ATOL absolute, default
# TOL: a rank statistic jumps where the rounding of the all-reduce swaps
# two all but tied scores, such as two history-less users' candidates of
# one item); a window missing from either fails
windows() {
    $PY - "$@" <<'EOF' > "$T/cmp.out" 2>&1
import json, sys
a, b, lo, hi, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
atol = float(sys.argv[6]) if len(sys.argv) > 6 else tol
keys = ("loss", "steps", "train_users", "train_events", "window_events", "eval_events")
ranking = ("candidates", "like.auc", "like.gauc", "like.ne", "like.logloss", "baseline.like.auc",
           "baseline.like.ne")
retrieval = ("hr@1", "hr@10", "hr@50", "ndcg@10", "mrr", "baseline.hr@10", "baseline.ndcg@10")
def load(p):
    w = {}
    for line in open(p):
        o = json.loads(line)
        if o.get("event") == "window":
            w[o["window"]] = o
    return w
A, B = load(a), load(b)
for k in range(lo, hi + 1):
    if k not in A or k not in B:
        sys.exit("window %d missing" % k)
    for key in keys + (ranking if "like.auc" in A[k] else retrieval):
        x, y = A[k][key], B[k][key]
        if x is None or y is None:
            if x != y:
                sys.exit("window %d %s: %s vs %s" % (k, key, x, y))
            continue
        d = abs(x - y) / max(abs(y), 1e-12)
        if key.endswith("auc"):
            d, t = abs(x - y), atol
        else:
            t = tol
        if (t == 0 and x != y) or d > t:
            sys.exit("window %d %s: %r vs %r" % (k, key, x, y))
print("%d windows" % (hi - lo + 1))
EOF
}

# --- causal ------------------------------------------------------------------
K=4
$PY - "$T/r.h5" "$T/poison.h5" "$K" <<'EOF' || fail "poison"
import shutil, sys, h5py, numpy as np
src, dst, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
shutil.copy(src, dst)
with h5py.File(dst, "r+") as f:
    ts = f["timestamps"][:]
    end = ts.min() + (k + 1) * 86400
    late = ts >= end
    n = int(f.attrs["num_items"])
    ids = f["item_ids"][:]
    ids[late] = (ids[late] * 7 + 3) % n + 1
    f["item_ids"][:] = ids
    r = f["events/rating"][:]
    r[late] = 5.5 - r[late]
    f["events/rating"][:] = r
    a = f["actions"][:]
    a[late] = (r[late] * 10).astype(a.dtype)
    f["actions"][:] = a
    print("poisoned", int(late.sum()), "of", len(ts), "events", file=sys.stderr)
EOF
run clean 1 "$T/r.h5" train.log_every=5 # its progress lines: the window, not an epoch
# the stream's progress lines carry MLPerf DLRMv4's count too (ranking; doc/ranking.md)
$PY -c 'import json, sys; t = [o for o in map(json.loads, open(sys.argv[1])) if o["event"] == "train"]
assert t and all(o["mlperf_gflops"] > 0 and o["mlperf_flops"] > 0 for o in t)' "$T/clean.jsonl" &&
    grep -q "window .* mlperf_gflops [0-9.]* mlperf_mfu" "$T/clean.out" &&
    pass "stream: mlperf_gflops on the progress lines and in the metrics" ||
    fail "stream: no mlperf_gflops on the progress lines or in the metrics"
run poison 1 "$T/poison.h5"
windows "$T/clean.jsonl" "$T/poison.jsonl" 0 $K 0 &&
    pass "causal: events after window $K's end poisoned: windows 0 .. $K identical ($(cat "$T/cmp.out"))" ||
    fail "causal: $(cat "$T/cmp.out")"
windows "$T/clean.jsonl" "$T/poison.jsonl" $((K + 1)) $((K + 1)) 0 &&
    fail "the poison changed nothing in window $((K + 1)): the test cannot fail" ||
    pass "the poison shows from window $((K + 1)) on ($(cat "$T/cmp.out"))"
# like_with_like NAME [FEWER]: the stream's final means (event stream and
# its line) are the model's and the baseline's means over the same windows:
# those with both figures, named on the line ("over windows A .. B");
# FEWER: some evaluated window has the model's figure alone (window 0)
like_with_like() {
    $PY - "$T/$1.jsonl" "$T/$1.out" "${2:-}" <<'EOF' > "$T/lwl.out" 2>&1
import json, re, sys
lines = list(map(json.loads, open(sys.argv[1])))
W = [o for o in lines if o.get("event") == "window" and o["eval_events"] > 0]
S = [o for o in lines if o.get("event") == "stream"][-1]
keys = [k for k in S if k.startswith("baseline.")]
for bk in keys:
    mk = bk[len("baseline."):]
    both = [o for o in W if o[mk] is not None and o[bk] is not None]
    assert len(both) == S["evaluated"] and (len(both) < len(W) or not sys.argv[3]), \
        (mk, len(both), len(W), S)
    for k in (mk, bk):
        want = sum(o[k] for o in both) / len(both)
        assert abs(S[k] - want) <= 1e-8, (k, S[k], want)  # windows: 9 digits
first, last = both[0]["window"], both[-1]["window"]
assert (S["mean_first_window"], S["mean_last_window"]) == (first, last), S
text = open(sys.argv[2]).read()
assert re.search(r"stream: windows 0 \.\. \d+ in .* s; model and baseline means over windows "
                 r"%d \.\. %d: " % (first, last), text), text[-400:]
print("%d of %d evaluated windows, %d .. %d" % (len(both), len(W), first, last))
EOF
}
like_with_like clean fewer &&
    pass "the running average at the end: model and baseline over the same windows ($(cat "$T/lwl.out"))" ||
    fail "running average: $(cat "$T/lwl.out")"
grep -q "window 3 \[2023-11-.*, +1d): train [0-9]* users [0-9]* events, eval like AUC [0-9.]* (baseline [0-9.]*)" \
    "$T/clean.out" && pass "the window line" || fail "window line: $(grep 'window 3' "$T/clean.out")"
# window 0 starts at the first event: the user+item baseline has nothing to
# predict from, shown as absent ('-', null); window 1's is a figure
grep -q "window 0 \[.*eval like AUC [0-9.]* (baseline -)" "$T/clean.out" &&
    $PY -c 'import json, sys
w = {o["window"]: o for o in map(json.loads, open(sys.argv[1])) if o.get("event") == "window"}
b = ("baseline.like.auc", "baseline.like.ne")
assert all(w[0][k] is None for k in b) and w[0]["like.auc"] is not None, w[0]
assert all(isinstance(w[1][k], float) for k in b), w[1]' "$T/clean.jsonl" 2>"$T/b0.err" &&
    pass "window 0 (no earlier events): the baseline absent, window 1's a figure" ||
    fail "window 0's baseline: $(grep 'window 0 ' "$T/clean.out") $(cat "$T/b0.err")"
# each window's peak memory (VmHWM since its start; doc/training.md "Memory"):
# in its line and event, and flat after the reservation before window 0
# (a loose 25%: the 4x creep of a growing evaluation would show)
grep -q "^stream: the model's and the head's buffers sized for batches of [0-9]* tokens" "$T/clean.out" &&
    grep -q "^window 3 \[.*, [0-9.]* s, peak memory [0-9]* MiB" "$T/clean.out" &&
    $PY -c 'import json, sys
w = [o for o in map(json.loads, open(sys.argv[1])) if o.get("event") == "window"]
p = [o["peak_mib"] for o in w]
assert all(x > 0 and o["peak_mib_max"] >= x for x, o in zip(p, w)), p
assert max(p[1:]) <= 1.25 * p[1], p' "$T/clean.jsonl" 2>"$T/pk.err" &&
    pass "each window's peak memory said, flat" ||
    fail "peak memory: $(grep -m1 '^window 3 ' "$T/clean.out") $(tail -1 "$T/pk.err")"
NW=$(grep -c '"event":"window"' "$T/clean.jsonl")
grep -q "window 3/$NW step [0-9]*/[0-9]* loss" "$T/clean.out" && ! grep -q "epoch [0-9]* step" "$T/clean.out" &&
    pass "the progress lines name the window (window 3/$NW)" ||
    fail "progress lines: $(grep -m2 'step [0-9]*/' "$T/clean.out")"

# --- P = 1, 2, 4 ---------------------------------------------------------------
N=$(grep -c '"event":"window"' "$T/clean.jsonl")
for np in 2 4; do
    run "p$np" "$np" "$T/r.h5"
    windows "$T/clean.jsonl" "$T/p$np.jsonl" 0 $((N - 1)) 1e-6 5e-3 &&
        pass "P = $np: every window's loss and metrics as P = 1 (1e-6, AUCs 5e-3; $(cat "$T/cmp.out"))" ||
        fail "P = $np vs 1: $(cat "$T/cmp.out")"
done

# parallel.split_long: every sequence of a step into 2 chunks on 2 ranks
# (ranking's window batches take pieces): as P = 1 unsplit
run sp2 2 "$T/r.h5" parallel.split_long=auto debug.split_chunks=2
windows "$T/clean.jsonl" "$T/sp2.jsonl" 0 $((N - 1)) 1e-6 5e-3 &&
    grep -q 'split_long: [1-9][0-9]* sequences* cut into' "$T/sp2.out" &&
    pass "split_long, 2 chunks at P = 2: every window as P = 1 unsplit ($(cat "$T/cmp.out"))" ||
    fail "split_long in the stream: $(cat "$T/cmp.out")"

# eval.max_events: at most 30 events a window, the same sample on any P
run m1 1 "$T/r.h5" eval.max_events=30
run m3 3 "$T/r.h5" eval.max_events=30
# (the AUCs of 30 events to 0.05: one swapped near-tie moves them by ~0.005;
# the counts, the losses and NE to 1e-6 say the sample is the same)
windows "$T/m1.jsonl" "$T/m3.jsonl" 0 $((N - 1)) 1e-6 5e-2 &&
    pass "eval.max_events = 30: P = 3 as P = 1 ($(cat "$T/cmp.out"))" || fail "eval.max_events: $(cat "$T/cmp.out")"
ev=$(sed -n 's/.*"window_events":\([0-9]*\),"eval_events":\([0-9]*\),.*/\1 \2/p' "$T/m1.jsonl" |
    awk '$2 > 30 || ($1 > 30 && $2 != 30) || ($1 <= 30 && $2 != $1) { bad = 1 } $1 > 30 { cut++ }
         END { print (bad ? "bad" : "ok"), cut + 0 }')
[ "${ev%% *}" = ok ] && [ "${ev#* }" -gt 0 ] &&
    pass "eval.max_events = 30: min(30, the window's events) evaluated (${ev#* } windows cut)" ||
    fail "eval.max_events = 30: $ev: $(grep -o '"window_events":[0-9]*,"eval_events":[0-9]*' "$T/m1.jsonl" | tr '\n' ' ')"

# --- stop after window K, resume on another P ---------------------------------
run part 2 "$T/r.h5" "output.checkpoint_dir=$T/ck" "data.stream_end=+$((K + 1))d"
last=$(sed -n 's/.*"event":"window","window":\([0-9]*\),.*/\1/p' "$T/part.jsonl" | tail -1)
[ "$last" = "$K" ] && pass "data.stream_end = +$((K + 1))d: windows 0 .. $K" ||
    fail "data.stream_end: the last window is '$last', not $K"
run rest 4 "$T/r.h5" "output.checkpoint_dir=$T/ck" train.resume=auto
grep -q "stream: resuming after window $K" "$T/rest.out" || fail "no resume line: $(grep stream "$T/rest.out")"
windows "$T/p4.jsonl" "$T/rest.jsonl" $((K + 1)) $((N - 1)) 1e-6 5e-3 &&
    pass "stopped after window $K at P = 2, resumed at P = 4: as the uninterrupted run ($(cat "$T/cmp.out"))" ||
    fail "resumed: $(cat "$T/cmp.out")"
# the running average (event stream) of A and B agree: the windows it counts
# exactly, the means as the windows' figures (TOL relative, the AUCs ATOL)
average() {
    $PY - "$@" <<'EOF' > "$T/avg.out" 2>&1
import json, sys
a, b, tol, atol = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
A, B = ([o for o in map(json.loads, open(p)) if o.get("event") == "stream"][-1] for p in (a, b))
for k in ("evaluated", "mean_first_window", "mean_last_window"): # the windows of the mean
    if A.get(k) != B.get(k) or A.get(k) is None:
        sys.exit("%s %s vs %s" % (k, A.get(k), B.get(k)))
keys = [k for k in A if "." in k or "@" in k or k == "mrr"]
for k in keys:
    x, y = A[k], B[k]
    if (x is None) != (y is None) or x is not None and abs(x - y) > (atol if k.endswith("auc") else tol * max(abs(y), 1e-12)):
        sys.exit("%s: %r vs %r" % (k, x, y))
print("%d windows, %d .. %d, %s" % (A["evaluated"], A["mean_first_window"], A["mean_last_window"],
                                   ", ".join(sorted(keys))))
EOF
}
average "$T/p4.jsonl" "$T/rest.jsonl" 1e-6 5e-3 &&
    pass "resumed: the running average over windows 0 .. as the uninterrupted run's ($(cat "$T/avg.out"))" ||
    fail "resumed running average: $(cat "$T/avg.out")"
# a signal during window 3's training (step 12): exit 75, the checkpoint
# of window 2 kept, window 3 trained again on resume
"$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/r.h5" $S "output.checkpoint_dir=$T/cks" \
    debug.signal_rank=1:12 >"$T/sig.out" 2>&1
rc=$?
[ $rc = 75 ] && grep -q "stopped by signal 15 at step 12 after window 2" "$T/sig.out" &&
    pass "a signal in window 3: exit 75 after window 2" || fail "signal: rc $rc, $(tail -3 "$T/sig.out")"
run sigr 1 "$T/r.h5" "output.checkpoint_dir=$T/cks" train.resume=auto
windows "$T/clean.jsonl" "$T/sigr.jsonl" 3 $((N - 1)) 1e-6 5e-3 &&
    pass "resumed after the signal (P = 2 -> 1): windows 3 .. as the uninterrupted run ($(cat "$T/cmp.out"))" ||
    fail "resumed after the signal: $(cat "$T/cmp.out")"
average "$T/clean.jsonl" "$T/sigr.jsonl" 1e-6 5e-3 &&
    pass "resumed after the signal: the running average as the uninterrupted run's ($(cat "$T/avg.out"))" ||
    fail "running average after the signal: $(cat "$T/avg.out")"
expect_error "(data.window: 1d there, 2d here)" "$FS" train "$IN" "data.path=$T/r.h5" $S \
    data.window=2d "output.checkpoint_dir=$T/ck" train.resume=auto

# --- the fake device: the CPU's windows, exactly ---------------------------------
run fake 1 "$T/r.h5" device.type=fake
windows "$T/clean.jsonl" "$T/fake.jsonl" 0 $((N - 1)) 0 &&
    pass "device.type = fake: every window as the CPU's, exactly ($(cat "$T/cmp.out"))" ||
    fail "fake device: $(cat "$T/cmp.out")"

# --- model.bias started at the smoothed means of the events before the
# stream (data.split = time:V,T with V its start): causal too, the poison
# after window K changes none of windows 0 .. K
V=$($PY -c 'import sys, h5py; print(int(h5py.File(sys.argv[1], "r")["timestamps"][:].min()) + 86400)' "$T/r.h5")
B="model.bias=on data.split=time:$V,$((V + 1)) data.stream_start=$V"
# shellcheck disable=SC2086
run bias 1 "$T/r.h5" $B
# shellcheck disable=SC2086
run biasp 1 "$T/poison.h5" $B
windows "$T/bias.jsonl" "$T/biasp.jsonl" 0 $((K - 1)) 0 &&
    pass "model.bias from the events before the stream: causal ($(cat "$T/cmp.out"))" ||
    fail "model.bias: $(cat "$T/cmp.out")"
# with model.recency and model.factors: causal, the same windows at P = 2, and a run stopped
# after window K - 1 and resumed at P = 1 as the uninterrupted one (each
# window's evaluation shifts the bias rows by the events before it; the
# history and factor terms read the users' labels before it)
BR="$B model.recency=4 model.factors=3"
# shellcheck disable=SC2086
run brec 1 "$T/r.h5" $BR
# shellcheck disable=SC2086
run brecp 1 "$T/poison.h5" $BR
windows "$T/brec.jsonl" "$T/brecp.jsonl" 0 $((K - 1)) 0 &&
    pass "model.bias, model.recency and model.factors: causal ($(cat "$T/cmp.out"))" ||
    fail "model.recency, causal: $(cat "$T/cmp.out")"
NB=$(grep -c '"event":"window"' "$T/brec.jsonl")
# shellcheck disable=SC2086
run brec2 2 "$T/r.h5" $BR
windows "$T/brec.jsonl" "$T/brec2.jsonl" 0 $((NB - 1)) 1e-6 5e-3 &&
    pass "model.bias, model.recency and model.factors: P = 2 as P = 1 ($(cat "$T/cmp.out"))" ||
    fail "model.recency, P = 2: $(cat "$T/cmp.out")"
# shellcheck disable=SC2086
run brpart 2 "$T/r.h5" $BR "output.checkpoint_dir=$T/ckr" "data.stream_end=+$((K + 1))d"
# shellcheck disable=SC2086
run brrest 1 "$T/r.h5" $BR "output.checkpoint_dir=$T/ckr" train.resume=auto
windows "$T/brec.jsonl" "$T/brrest.jsonl" $K $((NB - 1)) 1e-6 5e-3 &&
    pass "model.bias, model.recency and model.factors: stopped after window $((K - 1)) at P = 2, resumed at P = 1 as the uninterrupted run ($(cat "$T/cmp.out"))" ||
    fail "model.recency, resumed: $(cat "$T/cmp.out")"

# --- retrieval: the same checks, HR@K and NDCG@K against the item table -------
S="train.schedule=stream data.window=1d train.batch_size=8 train.log_every=100"
run rclean 1 "$T/r.h5"
run rpoison 1 "$T/poison.h5"
windows "$T/rclean.jsonl" "$T/rpoison.jsonl" 0 $K 0 &&
    pass "retrieval, causal: windows 0 .. $K identical after the poison ($(cat "$T/cmp.out"))" ||
    fail "retrieval, causal: $(cat "$T/cmp.out")"
windows "$T/rclean.jsonl" "$T/rpoison.jsonl" $((K + 1)) $((K + 1)) 0 &&
    fail "retrieval: the poison changed nothing in window $((K + 1))" ||
    pass "retrieval: the poison shows from window $((K + 1)) on ($(cat "$T/cmp.out"))"
grep -q "window 3 \[.*\]*: train [0-9]* users [0-9]* events.*, eval HR@10 [0-9.]* (baseline [0-9.]*), NDCG@10 [0-9.]* (baseline [0-9.]*)" \
    "$T/rclean.out" && pass "retrieval's window line" || fail "retrieval's window line: $(grep 'window 3' "$T/rclean.out")"
# window 0 (no event before it: no user has a history to rank from): the
# popularity baseline absent (null), not a figure from nothing
$PY -c 'import json, sys
w = {o["window"]: o for o in map(json.loads, open(sys.argv[1])) if o.get("event") == "window"}
b = ("baseline.hr@10", "baseline.ndcg@10")
assert w[0]["eval_events"] == 0 and all(w[0][k] is None for k in b), w[0]
assert all(isinstance(w[1][k], float) for k in b), w[1]' "$T/rclean.jsonl" 2>"$T/b0.err" &&
    pass "retrieval's window 0: the popularity baseline absent, window 1's a figure" ||
    fail "retrieval's window 0 baseline: $(grep 'window 0 ' "$T/rclean.out") $(cat "$T/b0.err")"
like_with_like rclean &&
    pass "retrieval's running average: model and baseline over the same windows ($(cat "$T/lwl.out"))" ||
    fail "retrieval's running average: $(cat "$T/lwl.out")"
run rp3 3 "$T/r.h5"
windows "$T/rclean.jsonl" "$T/rp3.jsonl" 0 $((N - 1)) 1e-6 &&
    pass "retrieval, P = 3: every window's loss and metrics as P = 1 ($(cat "$T/cmp.out"))" ||
    fail "retrieval, P = 3 vs 1: $(cat "$T/cmp.out")"
run rfake 1 "$T/r.h5" device.type=fake
windows "$T/rclean.jsonl" "$T/rfake.jsonl" 0 $((N - 1)) 0 &&
    pass "retrieval, device.type = fake: every window as the CPU's, exactly ($(cat "$T/cmp.out"))" ||
    fail "retrieval, fake device: $(cat "$T/cmp.out")"

# --- bad input -------------------------------------------------------------------
ok() { "$FS" train "$IN" "data.path=$T/r.h5" train.task=ranking 'train.tasks=like:binary:rating>=4' "$@"; }
expect_error "data.window = '0': must be a duration > 0 (such as 3600, 30m, 6h, 1d)" ok train.schedule=stream data.window=0
expect_error "data.window = '-6h': must be a duration > 0" ok train.schedule=stream data.window=-6h
expect_error "data.window = '1x': not a duration: seconds (3600) or a number with a unit s, m, h, d or w" \
    ok train.schedule=stream data.window=1x
expect_error "data.window = '0.5': not a whole number of seconds" ok train.schedule=stream data.window=0.5
# the one duration parser (train.follow_timeout's): 1.5h and 2w pass, to the next check
expect_error "data.stream_end = '2020-01-01' is not after data.stream_start = '2021-01-01'" \
    ok train.schedule=stream data.window=1.5h data.stream_start=2021-01-01 data.stream_end=2020-01-01
expect_error "data.stream_end = '+2w' is not after" \
    ok train.schedule=stream data.window=2w data.stream_start=+3w data.stream_end=+2w
expect_error "train.schedule = stream needs data.window" ok train.schedule=stream
expect_error "data.stream_end = '2020-01-01' is not after data.stream_start = '2021-01-01'" \
    ok train.schedule=stream data.window=1d data.stream_start=2021-01-01 data.stream_end=2020-01-01
expect_error "data.stream_end (2023-11-01 00:00, 1698796800) is not after data.stream_start" \
    ok train.schedule=stream data.window=1d data.stream_end=2023-11-01
expect_error "data.stream_start = '2021-13-01': not a time" ok train.schedule=stream data.window=1d data.stream_start=2021-13-01
expect_error "data.window is set but train.schedule = epochs" ok data.window=1d
expect_error "model.bias = on starts from the labels of data.split's training events, and with data.split = loo some come after" \
    ok train.schedule=stream data.window=1d model.bias=on
$PY -c 'import shutil, sys, h5py
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f: del f["timestamps"]' "$T/r.h5" "$T/nots.h5" || fail "copy"
expect_error "train.schedule = stream: $T/nots.h5 has no /timestamps" ok "data.path=$T/nots.h5" \
    train.schedule=stream data.window=1d
expect_error "train.schedule = stream: train.loss = full has no positions without a target" \
    "$FS" train "$IN" "data.path=$T/r.h5" train.schedule=stream data.window=1d train.loss=full
expect_error "output.checkpoint_delta_every = 2: train.schedule = stream writes a full checkpoint after each window" \
    ok train.schedule=stream data.window=1d embedding.dynamic=on "output.checkpoint_dir=$T/ckd" \
    train.checkpoint_every=4 output.checkpoint_delta_every=2
expect_error "train.schedule = stream with train.task = retrieval: parallel.split_long cuts" \
    "$FS" train "$IN" "data.path=$T/r.h5" train.schedule=stream data.window=1d parallel.split_long=auto
finish
