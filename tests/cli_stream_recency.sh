#!/bin/sh
# cli_stream_recency: model.recency = auto in a stream (doc/training.md,
# "Streaming"): the half-life is chosen again before each window on the
# previous one, "off" among the choices, and printed per window.
#   - a stream whose users' like-rate follows a slow hidden state (kept
#     from event to event, changed with chance 0.03) chooses a half-life
#     for its last windows, and there the model is well above the online
#     user+item baseline; the same users with labels drawn anew at every
#     event (no state to follow) choose off there: the choice flips with
#     the stream;
#   - the windows (losses, metrics and the choices) at P = 2 as at P = 1;
#   - a run stopped by data.stream_end and resumed (train.resume = auto)
#     makes the windows after it as the uninterrupted run (the user rows'
#     scale of the last choice is in the checkpoint).
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in
PY=/usr/bin/python3

# gen P: 80 users over 9 days, 3-8 events a day, items 1..60 (no item
# effect); each user's state is redrawn with chance P before an event, and
# the rating is 4.5 (a like) with chance 0.8 in state 1, 0.2 in state 0
gen() {
    awk -v p="$1" 'BEGIN { srand(5); print "userId,movieId,rating,timestamp"
        for (u = 1; u <= 80; u++) { s = rand() < 0.5; t = 1700000000 + int(rand() * 3600)
            for (d = 0; d < 9; d++) { n = 3 + int(rand() * 6)
                for (k = 0; k < n; k++) { t += 1 + int(rand() * 86400 / n / 2)
                    if (rand() < p) s = rand() < 0.5
                    printf "%d,%d,%.1f,%d\n", u, 1 + int(rand() * 60),
                        rand() < (s ? 0.8 : 0.2) ? 4.5 : 1.5, t }
                t = 1700000000 + (d + 1) * 86400 + int(rand() * 3600) } } }'
}
gen 0.03 > "$T/slow.csv"
gen 1 > "$T/iid.csv"
for x in slow iid; do
    "$FS" data import --format movielens "$T/$x.csv" -o "$T/$x.h5" >/dev/null || { fail "import $x"; finish; }
done
# day 0 fits the biases, day 1 chooses before window 0, windows of a day from day 2 (7)
S="train.task=ranking train.tasks=like:binary:rating>=4 train.schedule=stream data.window=1d
train.batch_size=8 train.log_every=1000 model.bias=on model.recency=auto
data.split=time:1700086400,1700172800 data.stream_start=1700172800"
run() { # run DATA NP [OVERRIDES...]: the outputs DATA.NP (OUT=NAME: NAME.NP)
    name=$1 np=$2 out=${OUT:-$1}; shift 2
    # shellcheck disable=SC2086
    "$MPIRUN" -np "$np" "$FS" train "$IN" "data.path=$T/$name.h5" $S \
        "output.metrics=$T/$out$np.jsonl" "$@" >"$T/$out$np.out" 2>&1 ||
        fail "train $out on $np: $(tail -5 "$T/$out$np.out")"
}
run slow 1
run iid 1
run slow 2
OUT=part run slow 1 "output.checkpoint_dir=$T/ck" data.stream_end=+4d
OUT=rest run slow 1 "output.checkpoint_dir=$T/ck" train.resume=auto
# the windows' choices and AUCs of the three runs
check() {
    $PY - "$T/slow1.jsonl" "$T/iid1.jsonl" "$T/slow2.jsonl" "$T/rest1.jsonl" <<'EOF' > "$T/cmp.out" 2>&1
import json, sys
def load(p):
    return [o for o in map(json.loads, open(p)) if o.get("event") == "window"]
slow, iid, slow2, rest = (load(p) for p in sys.argv[1:])
if len(slow) != 7 or len(iid) != 7 or len(slow2) != 7:
    sys.exit("windows: %d, %d, %d (7 each)" % (len(slow), len(iid), len(slow2)))
hs, hi = [w["recency"] for w in slow], [w["recency"] for w in iid]
msg = "half-lives (0: off): slow state %s, labels drawn anew %s" % (hs, hi)
if not all(h > 0 for h in hs[4:]) or not all(h == 0 for h in hi[4:]):
    sys.exit("the choice does not flip in windows 4-6: " + msg)
lead = sum(w["like.auc"] - w["baseline.like.auc"] for w in slow[4:]) / 3
if lead < 0.02:
    sys.exit("slow state, windows 4-6: the model's like AUC only %+.4f over the baseline's (%s)"
             % (lead, msg))
for a, b in zip(slow, slow2):
    if a["recency"] != b["recency"]:
        sys.exit("window %d: half-life %g at P = 1, %g at P = 2" % (a["window"], a["recency"], b["recency"]))
    for key in ("loss", "like.auc", "like.ne", "baseline.like.auc"):
        x, y = a[key], b[key]
        if abs(x - y) > (5e-3 if key.endswith("auc") else 1e-5 * max(abs(y), 1e-12)):
            sys.exit("window %d %s: %r at P = 1, %r at P = 2" % (a["window"], key, x, y))
got = [w["window"] for w in rest]
if not rest or got != list(range(got[0], 7)) or got[0] > 4 or got[0] < 1:
    sys.exit("resumed: windows %s (from 1 .. 4 to 6)" % got)
for b in rest:
    a = slow[b["window"]]
    for key in ("recency", "loss", "like.auc", "like.ne"):
        if a[key] != b[key]:
            sys.exit("resumed, window %d %s: %r, uninterrupted %r" % (a["window"], key, b[key], a[key]))
print("%s; slow state, windows 4-6: the model %+.4f like AUC over the baseline; P = 2 as P = 1; "
      "resumed at window %d as the uninterrupted run" % (msg, lead, got[0]))
EOF
}
if check; then
    pass "model.recency = auto per window: $(cat "$T/cmp.out")"
else
    fail "model.recency = auto per window: $(cat "$T/cmp.out")"
fi
# a checkpoint whose user-row scale is not a number: refused, naming the file
# and the attribute, and no checkpoint directory made
if have_h5py; then
    ck=$(ls "$T/ck"/ckpt-*.h5 | head -n 1)
    cp "$ck" "$T/nan.h5"
    $PY -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); f.attrs['bias_uscale_0'] = float('nan')" \
        "$T/nan.h5" || fail "h5py: could not write the attribute"
    # shellcheck disable=SC2086
    expect_error "$T/nan.h5: attribute bias_uscale_0 = nan" "$MPIRUN" -np 1 "$FS" train "$IN" \
        "data.path=$T/slow.h5" $S "output.checkpoint_dir=$T/cknan" "train.resume=$T/nan.h5"
    [ -e "$T/cknan" ] && [ -n "$(ls -A "$T/cknan")" ] && fail "a checkpoint left in $T/cknan: $(ls "$T/cknan")"
fi
if grep -q 'model.recency [0-9of]' "$T/slow1.out"; then
    pass "the window lines name the half-life"
else
    fail "no half-life on the window lines: $(grep 'window 4 ' "$T/slow1.out")"
fi
finish
