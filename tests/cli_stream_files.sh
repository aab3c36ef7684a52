#!/bin/sh
# cli_stream_files: train.schedule = stream over window files (data.path as
# a glob or a list; doc/training.md "Streaming", "Window files"):
#   - a stream of per-day files (data gen --stream --split-days) gives the
#     per-window losses and the model's metrics of the same events in one
#     dataset (-o, the same seed) exactly, at P = 1 and P = 2: the same
#     users (matched by raw id), histories (data.max_seq_len - 1 from the
#     earlier files), batches, random keys (by raw user id) and item rows
#     (a dynamic table keyed by raw id); windows that span two files and
#     files of several windows (--file-days 2) too, and eval.max_events's
#     sample; the baselines are not compared (over files they are fitted on
#     the window's users' histories, doc/training.md);
#   - checkpoint after window 2 over the first files, resumed with
#     every file: ends as the uninterrupted run (exactly, at the same P);
#   - a file delivered late (its events before windows already trained)
#     refused on resume;
#   - train.follow: a day file moved into place while the run waits is
#     trained, the run ends at data.stream_end, resumes with the next
#     window and ends by train.follow_timeout (naming the window left), and
#     its windows are those of a run over every file;
#   - a signal (SIGUSR1 to mpirun) while following: exit 75, the checkpoint kept;
#   - model.bias over day files with new items: P = 1 = P = 2 (1e-6), and
#     stopped over three files, resumed over five = uninterrupted;
#   - item and user features over day files (codes renumbered per file,
#     matched by their /feature_maps strings) = one dataset, exactly;
#   - retrieval over window files (the candidate set: the files' items so
#     far): P = 1 = P = 2 (1e-6);
#   - refused by name: a list out of time order, overlapping files, a glob
#     that matches nothing, window files without the
#     stream schedule or without embedding.dynamic = on, features.user = id
#     (a window's own numbering of its users).
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in
PY=/usr/bin/python3
G="--stream --days 5 --users 80 --items 120 --new-items-per-day 10 --drift 0.05 --labels --seed 3"
"$FS" data gen $G -o "$T/one.h5" --split-days "$T/D" >/dev/null 2>"$T/gen.err" &&
    "$FS" data gen $G --split-days "$T/D2" --file-days 2 >/dev/null 2>>"$T/gen.err" ||
    { fail "data gen: $(cat "$T/gen.err")"; finish; }
S="device.type=cpu train.task=ranking train.tasks=like:binary:like train.schedule=stream
data.window=12h train.batch_size=8 train.log_every=100 model.layers=1 model.dim=16
embedding.dynamic=on"
run() {
    name=$1 np=$2 data=$3; shift 3
    # shellcheck disable=SC2086
    "$MPIRUN" -np "$np" "$FS" train "$IN" "data.path=$data" $S "output.metrics=$T/$name.jsonl" "$@" \
        >"$T/$name.out" 2>&1 || fail "train $name: $(tail -5 "$T/$name.out")"
}
# same A B: the window events of A and B agree exactly (the model's keys)
same() {
    $PY - "$T/$1.jsonl" "$T/$2.jsonl" <<'EOF' > "$T/cmp.out" 2>&1 && pass "$3: $(cat "$T/cmp.out")" || fail "$3: $(cat "$T/cmp.out")"
import json, sys
keys = ("loss", "steps", "train_users", "train_events", "window_events", "eval_events",
        "candidates", "like.auc", "like.gauc", "like.ne", "like.logloss")
def load(p):
    return [json.loads(l) for l in open(p) if '"event":"window"' in l]
A, B = load(sys.argv[1]), load(sys.argv[2])
if len(A) != len(B) or len(A) < 8:
    sys.exit("%d vs %d windows" % (len(A), len(B)))
for a, b in zip(A, B):
    for k in keys:
        if a[k] != b[k]:
            sys.exit("window %d %s: %r vs %r" % (a["window"], k, a[k], b[k]))
print("%d windows identical" % len(A))
EOF
}
run one1 1 "$T/one.h5"
run files1 1 "$T/D/day-*.h5" "output.checkpoint_dir=$T/ck0"
same one1 files1 "P = 1: day files = one dataset"
grep -q "window 1 \[2020-01-01 12:34" "$T/files1.out" ||
    fail "window 1 should span day files 0 and 1: $(grep '^window 1 ' "$T/files1.out")"
run one2 2 "$T/one.h5"
run files2 2 "$T/D/day-*.h5"
same one2 files2 "P = 2: day files = one dataset"
run files2d 1 "$T/D2/day-*.h5"
same one1 files2d "files of two days (--file-days 2) = one dataset"
run onem 2 "$T/one.h5" eval.max_events=30
run filesm 2 "$T/D/day-0000.h5,$T/D/day-0001.h5,$T/D/day-0002.h5,$T/D/day-0003.h5,$T/D/day-0004.h5" eval.max_events=30
same onem filesm "a list, eval.max_events = 30 (the sample keyed by raw user id), P = 2"

# stopped after window 2 (within the first two days), resumed over all (exactly at the same P; another P: cli_stream.sh)
run part 1 "$T/D/day-0000.h5,$T/D/day-0001.h5" "output.checkpoint_dir=$T/ck" data.stream_end=+36h
run rest 1 "$T/D/day-*.h5" "output.checkpoint_dir=$T/ck" train.resume=auto
cat "$T/part.jsonl" "$T/rest.jsonl" > "$T/joined.jsonl"
same files1 joined "stopped after window 2 over two files, resumed with every file"
# a file delivered late (day 1, after windows 0 .. 2 were trained over days
# 0 and 2) is refused on resume (the checkpoint counts the files before
# its windows' end: the message says how many, not which)
run gap 1 "$T/D/day-0000.h5,$T/D/day-0002.h5" data.window=1d data.stream_start=2020-01-01 "output.checkpoint_dir=$T/gck"
expect_error "a file delivered late" "$FS" train "$IN" $S data.window=1d data.stream_start=2020-01-01 \
    "data.path=$T/D/day-0000.h5,$T/D/day-0001.h5,$T/D/day-0002.h5,$T/D/day-0003.h5" "output.checkpoint_dir=$T/gck" train.resume=auto

# train.follow: days 0 .. 2 there, day 3 moved into place after a delay
# (written beside it, then renamed) once the run has trained window 1 (the
# last that days 0 .. 2 complete); the run ends at data.stream_end after
# window 2 (day 3's file completes it), whatever the delay. Day 4 added and
# the run resumed with train.follow (no data.stream_end): window 3, then
# train.follow_timeout ends it (nothing more comes: a healthy end whatever
# the load; the line names the window left untrained). The windows = a run
# over every file from the start (P = 2). A timeout that must not fire
# before a file arrives is a hang guard (120 s; 3 s failed once on a loaded
# machine), never an assertion on time.
F="data.window=1d data.stream_start=2020-01-01"
mkdir "$T/W" && cp "$T/D/day-0000.h5" "$T/D/day-0001.h5" "$T/D/day-0002.h5" "$T/W/"
(i=0; while ! grep -q "^window 1 " "$T/follow.out" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.5; i=$((i + 1)); done
 cp "$T/D/day-0003.h5" "$T/W/.day-0003.h5.tmp" && mv "$T/W/.day-0003.h5.tmp" "$T/W/day-0003.h5") &
run follow 2 "$T/W/day-*.h5" $F train.follow=on train.follow_timeout=120 data.stream_end=2020-01-04 \
    "output.checkpoint_dir=$T/fck"
wait
grep -q "day-0003.h5 added after" "$T/follow.out" && grep -q "^window 2 " "$T/follow.out" &&
    ! grep -q "^window 3 \|no new file for" "$T/follow.out" &&
    pass "train.follow picked up day 3, trained window 2 and ended at data.stream_end" ||
    fail "train.follow: $(grep -E 'follow|^window' "$T/follow.out")"
cp "$T/D/day-0004.h5" "$T/W/"
run follow2 2 "$T/W/day-*.h5" $F train.follow=on train.follow_timeout=0.5 "output.checkpoint_dir=$T/fck" train.resume=auto
# ... ended by the timeout, saying that day 4's window is left: its end is not known yet
grep -q "no new file for .* (train.follow_timeout): ending after window 3; window 4 \[2020-01-05 00:00, +1d) is not trained: .*day-0004.h5 has events in it" "$T/follow2.out" &&
    pass "train.follow_timeout ended the resumed run, naming the window left untrained" ||
    fail "untrained window: $(grep -E 'follow|^window' "$T/follow2.out")"
# resumed with nothing new: no window trained, said so (not "windows 4 .. 3")
run follow3 2 "$T/W/day-*.h5" $F train.follow=on train.follow_timeout=0.5 "output.checkpoint_dir=$T/fck" train.resume=auto
grep -q "^stream: no window trained (resumed after window 3)" "$T/follow3.out" &&
    pass "a resumed follower that trains nothing says so" || fail "follow3: $(grep '^stream' "$T/follow3.out")"
# a follower started before the first day waits for it (and the second,
# which completes window 0), ending at data.stream_end after window 0 (a
# hang guard of 120 s); none at all: the timeout ends it with an error
mkdir "$T/W3" "$T/W4"
(i=0; while ! grep -q "waiting for the first one" "$T/first.out" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.5; i=$((i + 1)); done
 for d in 0000 0001; do cp "$T/D/day-$d.h5" "$T/W3/.day-$d.h5.tmp" && mv "$T/W3/.day-$d.h5.tmp" "$T/W3/day-$d.h5"; done) &
run first 2 "$T/W3/day-*.h5" $F train.follow=on train.follow_timeout=120 data.stream_end=2020-01-02
wait
grep -q "train.follow: .*day-0000.h5 arrived after" "$T/first.out" && grep -q "^window 0 " "$T/first.out" &&
    pass "a follower started before the first file trains it" || fail "first: $(grep -E 'follow|^window' "$T/first.out")"
expect_error "train.follow: no file of $T/W4/day-*.h5 arrived within train.follow_timeout (0.5 s): nothing to train" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/W4/day-*.h5" $S $F train.follow=on train.follow_timeout=0.5
run all 2 "$T/D/day-*.h5" $F
cat "$T/follow.jsonl" "$T/follow2.jsonl" > "$T/followed.jsonl"
$PY - "$T/all.jsonl" "$T/followed.jsonl" <<'EOF' > "$T/cmp.out" 2>&1 && pass "followed, resumed: $(cat "$T/cmp.out")" || fail "follow: $(cat "$T/cmp.out")"
import json, sys
def load(p):
    return [json.loads(l) for l in open(p) if '"event":"window"' in l]
A, B = load(sys.argv[1]), load(sys.argv[2])
if [b["window"] for b in B] != [0, 1, 2, 3] or len(A) != 5:
    sys.exit("windows %s followed, %d over all files" % ([b["window"] for b in B], len(A)))
for a, b in zip(A, B):
    for k in ("loss", "train_events", "eval_events", "like.auc", "like.ne"):
        if a[k] != b[k]:
            sys.exit("window %d %s: %r vs %r" % (a["window"], k, a[k], b[k]))
print("windows 0 .. 3 = the run over all files")
EOF

# a signal while following: the checkpoint kept, exit 75 (a hang guard of
# 300 s for the run to reach the wait, never an assertion on time)
mkdir "$T/W2" && cp "$T/D/day-0000.h5" "$T/D/day-0001.h5" "$T/W2/"
# shellcheck disable=SC2086
"$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/W2/day-*.h5" $S $F train.follow=on \
    "output.checkpoint_dir=$T/sck" >"$T/sig.out" 2>&1 &
pid=$!
i=0
while ! grep -q "^window 0 \[" "$T/sig.out" && [ $i -lt 600 ]; do sleep 0.5; i=$((i + 1)); done
kill -USR1 $pid # forwarded by mpirun to the ranks (cli_signal.sh)
rc=0; wait $pid || rc=$?
[ $rc = 75 ] && grep -q "stopped by signal" "$T/sig.out" && ls "$T/sck"/ckpt-*.h5 >/dev/null 2>&1 &&
    pass "SIGUSR1 while following: exit 75, checkpoint kept" ||
    fail "SIGUSR1 while following: rc $rc: $(tail -3 "$T/sig.out")"
# a signal during window 0's last step leaves the window whole: recorded,
# checkpointed, then the stop (exit 75); one step earlier the window is
# begun and not recorded (debug.signal_rank R:STEP: rank R's SIGTERM)
last=$($PY -c 'import json, sys
print([json.loads(l) for l in open(sys.argv[1]) if "\"event\":\"window\"" in l][0]["step"])' "$T/all.jsonl")
for at in "$last" "$((last - 1))"; do
    rc=0
    # shellcheck disable=SC2086
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/D/day-*.h5" $S $F debug.signal_rank="1:$at" \
        "output.checkpoint_dir=$T/lck$at" "output.metrics=$T/l$at.jsonl" >"$T/l$at.out" 2>&1 || rc=$?
    if [ "$at" = "$last" ]; then
        [ $rc = 75 ] && grep -q "stopped by signal 15 at step $at after window 0;" "$T/l$at.out" &&
            ls "$T/lck$at"/ckpt-*.h5 >/dev/null 2>&1 && $PY - "$T/all.jsonl" "$T/l$at.jsonl" <<'PYEOF' &&
import json, sys
w = [[json.loads(l) for l in open(p) if '"event":"window"' in l] for p in sys.argv[1:]]
ok = len(w[1]) == 1 and all(w[0][0][k] == w[1][0][k] for k in ("loss", "steps", "like.auc", "like.ne"))
sys.exit(not ok)
PYEOF
            pass "signal in window 0's last step (step $at): the window recorded (= the whole run's window 0) and checkpointed" ||
            fail "signal in window 0's last step: rc $rc: $(grep -E 'stopped|^window' "$T/l$at.out")"
    else
        [ $rc = 75 ] && grep -q "(window 0, begun, is not recorded" "$T/l$at.out" &&
            ! grep -q '"event":"window"' "$T/l$at.jsonl" &&
            pass "signal in window 0's step $at of $last: the window begun, not recorded" ||
            fail "signal in window 0's step $at: rc $rc: $(grep -E 'stopped|^window' "$T/l$at.out")"
    fi
done

# model.bias over window files (new items every day; users idle in a
# window): its rows keyed by raw id over every file (train/bias_ids.h).
# P = 1 = P = 2 (1e-6: the sums' order; exact sums do not cover the
# biases), and a run stopped after
# window 0 over the first three files, resumed over all five (the rows of
# the items and users the later files bring keep their start): the
# uninterrupted run's windows, exactly (at P = 2). A follower is refused.
B="model.bias=on data.window=1d data.stream_start=2020-01-02 data.split=time:1577923200,1578009600"
# shellcheck disable=SC2086
run bias1 1 "$T/D/day-*.h5" $B
# shellcheck disable=SC2086
run bias2 2 "$T/D/day-*.h5" $B
# shellcheck disable=SC2086
run biasp 2 "$T/D/day-0000.h5,$T/D/day-0001.h5,$T/D/day-0002.h5" $B data.stream_end=2020-01-03 "output.checkpoint_dir=$T/bck"
# shellcheck disable=SC2086
run biasr 2 "$T/D/day-*.h5" $B "output.checkpoint_dir=$T/bck" train.resume=auto
cat "$T/biasp.jsonl" "$T/biasr.jsonl" > "$T/biasj.jsonl"
$PY - "$T/bias1.jsonl" "$T/bias2.jsonl" "$T/biasj.jsonl" <<'EOF' > "$T/cmp.out" 2>&1 && pass "model.bias over files: $(cat "$T/cmp.out")" || fail "model.bias over files: $(cat "$T/cmp.out")"
import json, sys
def load(p):
    return [json.loads(l) for l in open(p) if '"event":"window"' in l]
A, B, C = load(sys.argv[1]), load(sys.argv[2]), load(sys.argv[3])
if len(A) != 4 or len(B) != 4 or [c["window"] for c in C] != [0, 1, 2, 3]:
    sys.exit("windows: %d, %d, %s" % (len(A), len(B), [c["window"] for c in C]))
for what, X, Y, tol in (("P = 2", A, B, 1e-6), ("resumed", B, C, 0)):
    for a, b in zip(X, Y):
        for k in ("loss", "train_events", "eval_events", "like.auc", "like.ne"):
            if abs(a[k] - b[k]) > tol * max(abs(a[k]), 1):
                sys.exit("%s: window %d %s: %r vs %r" % (what, a["window"], k, a[k], b[k]))
print("4 windows, P = 1 = P = 2 = stopped after window 0 over 3 files and resumed over 5")
EOF
# shellcheck disable=SC2086
expect_error "model.bias = on over window files (data.path = $T/D/day-*.h5) is not supported with train.follow = on" \
    "$FS" train "$IN" $S $B train.follow=on "data.path=$T/D/day-*.h5"

# item and user features over window files (data/window_feats.h):
# Yambda-shaped days (every artist and album in every day: the first
# file's numbering is the one dataset's) with features.item = artist,album
# and a categorical user feature /users/grp keyed by raw user id (uid mod
# 4, added here; days 1 and 3 with its codes reversed, /feature_maps with
# them) give the one dataset's per-window losses and metrics exactly, at
# P = 2; and at P = 1 with the item codes of days 1 and 2 renumbered too
# (the codes matched by their strings).
"$FS" data gen --yambda --days 4 --users 80 --tracks 200 --artists 6 --albums 20 --median-length 30 \
    --seed 2 -o "$T/y1.h5" --split-days "$T/Y" >/dev/null 2>"$T/gen.err" ||
    { fail "data gen --yambda: $(cat "$T/gen.err")"; finish; }
$PY - "$T/y1.h5" "$T/Y"/day-*.h5 <<'EOF' || fail "adding /users/grp"
import h5py, sys, numpy as np
for i, p in enumerate(sys.argv[1:]):  # the one dataset, then days 0 .. 3
    with h5py.File(p, "r+") as f:
        v = (f["user_map"][:] % 4 + 1).astype(np.int32)
        m = [b"g0", b"g1", b"g2", b"g3"]
        if i in (2, 4):
            v, m = (5 - v).astype(np.int32), m[::-1]
        f.create_dataset("users/grp", data=v).attrs["cardinality"] = np.int64(5)
        f.create_dataset("feature_maps/users/grp", data=np.array(m, dtype="S2"))
EOF
mkdir "$T/Yp" && cp "$T/Y"/day-*.h5 "$T/Yp/"
$PY - "$T/Yp/day-0001.h5" "$T/Yp/day-0002.h5" <<'EOF' || fail "renumbering the day files' codes"
import h5py, sys
for p in sys.argv[1:]:
    with h5py.File(p, "r+") as f:
        for name in ("artist", "album"):
            m = list(f["feature_maps/items/" + name][:])
            K = len(m)
            v = f["items/" + name][:]
            f["items/" + name][...] = [K + 1 - x if x > 0 else 0 for x in v]
            f["feature_maps/items/" + name][...] = m[::-1]
EOF
Y="train.tasks=listen_plus:binary:played_ratio_pct>=50 data.window=1d data.stream_start=1970-01-02 features.item=artist,album features.user=grp"
# shellcheck disable=SC2086
run yone1 1 "$T/y1.h5" $Y
# shellcheck disable=SC2086
run yperm1 1 "$T/Yp/day-*.h5" $Y
# shellcheck disable=SC2086
run yone2 2 "$T/y1.h5" $Y
# shellcheck disable=SC2086
run yday2 2 "$T/Y/day-*.h5" $Y
$PY - "$T" <<'EOF' > "$T/cmp.out" 2>&1 && pass "features over day files: $(cat "$T/cmp.out")" || fail "features over day files: $(cat "$T/cmp.out")"
import json, sys
def load(n):
    return [json.loads(l) for l in open("%s/%s.jsonl" % (sys.argv[1], n)) if '"event":"window"' in l]
keys = ("loss", "train_events", "eval_events", "listen_plus.auc", "listen_plus.ne")
for x, y in (("yone1", "yperm1"), ("yone2", "yday2")):
    A, B = load(x), load(y)
    if len(A) != 3 or len(B) != 3:
        sys.exit("%s %d, %s %d windows" % (x, len(A), y, len(B)))
    for a, b in zip(A, B):
        for k in keys:
            if a[k] != b[k]:
                sys.exit("%s vs %s: window %d %s: %r vs %r" % (x, y, a["window"], k, a[k], b[k]))
print("3 windows: one dataset = day files, user codes of days 1, 3 renumbered (P = 2), "
      "and item codes of days 1, 2 too (P = 1)")
EOF

# retrieval over window files: P = 1 and P = 2 agree (1e-6: the all-reduce)
R=$(echo "$S" | sed 's/train.task=ranking train.tasks=like:binary:like/train.task=retrieval/')
S=$R run ret1 1 "$T/D/day-*.h5"
S=$R run ret2 2 "$T/D/day-*.h5"
$PY - "$T/ret1.jsonl" "$T/ret2.jsonl" <<'EOF' > "$T/cmp.out" 2>&1 && pass "retrieval over files: $(cat "$T/cmp.out")" || fail "retrieval over files: $(cat "$T/cmp.out")"
import json, sys
def load(p):
    return [json.loads(l) for l in open(p) if '"event":"window"' in l]
A, B = load(sys.argv[1]), load(sys.argv[2])
if len(A) != len(B) or len(A) < 8 or not any(a["eval_events"] for a in A):
    sys.exit("%d vs %d windows" % (len(A), len(B)))
for a, b in zip(A, B):
    for k in ("loss", "hr@10", "ndcg@10", "eval_events", "train_events"):
        if abs(a[k] - b[k]) > 1e-6 * max(abs(b[k]), 1):
            sys.exit("window %d %s: %r vs %r" % (a["window"], k, a[k], b[k]))
print("%d windows, P = 1 = P = 2" % len(A))
EOF

# refusals
expect_error "is older than the file before it" "$FS" train "$IN" $S "data.path=$T/D/day-0000.h5,$T/D/day-0002.h5,$T/D/day-0001.h5"
grep -q "day-0001.h5" "$T/err" && grep -q "day-0002.h5" "$T/err" ||
    fail "the order's refusal should name both files: $(cat "$T/err")"
expect_error "data.path: cannot expand the pattern '$T/none/day-*.h5'" "$FS" train "$IN" $S "data.path=$T/none/day-*.h5"
expect_error "overlaps the file before it" "$FS" train "$IN" $S "data.path=$T/D/day-0000.h5,$T/D2/day-0000.h5"
expect_error "embedding.dynamic = on" "$FS" train "$IN" $S embedding.dynamic=off "data.path=$T/D/day-*.h5"
expect_error "features.user = id over window files" "$FS" train "$IN" $S features.user=id "data.path=$T/D/day-*.h5"
expect_error "train.schedule = stream" "$FS" train "$IN" device.type=cpu embedding.dynamic=on "data.path=$T/D/day-*.h5"
finish
