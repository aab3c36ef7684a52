#!/bin/sh
# cli_rank: ranking (train.task = ranking) from the command line.
#   - the metrics of an evaluation equal their recomputation in Python from
#     the dumped (user, label, score) rows (tests/rank_metrics.py, 1e-9) at
#     P = 1, 2, 3, with tied scores; a checkpoint evaluated at P = 1, 2, 3
#     gives the same metrics bit for bit;
#   - the losses agree at P = 1, 2, 4 and with an embedding group (1e-6),
#     for summed and interleaved actions, with item, user and event
#     features; a run resumed on another P equals the uninterrupted one;
#   - model.last_layer = targets (the last layer at the outputs read): the
#     losses and the evaluation's metrics of the full layer (1e-6), summed
#     and interleaved, with contextual tokens; on the fake device the same
#     bits as on the CPU;
#   - parallel.split_long (sequences cut into chunks on several ranks):
#     the losses and metrics of the unsplit run at P = 1, 2, 4;
#   - the baselines (train.baseline) are reported, the global one at AUC 0.5;
#   - keep_best follows the validation AUC of train.select;
#   - score: the same file at P = 1 and 2; the test events scored from a
#     dataset without them reproduce the evaluation's AUC (1e-6); bad pairs
#     are refused with FILE:LINE and nothing is written; export writes the
#     head;
#   - model.calibrate = platt, temperature: the fit against numpy's, the test's order
#     unchanged, the validation loss not raised; stored in the checkpoint
#     (P = 1, resumed, score: the same test); refused without a binary
#     task, a validation part, in a stream, for retrieval;
#   - bad parameters are refused before training.
. "$(dirname "$0")/lib.sh"
need_mpirun
have_h5py || { echo "SKIP: $PY cannot import h5py and numpy"; exit 77; }
IN=$TOP_SRCDIR/input/tiny.in

# ratings with a float rating and a 0/1 click column (categorical), genres,
# an age per user; users 1..4 share one history (tied scores)
awk 'BEGIN { srand(5); print "userId,movieId,rating,timestamp,click"
    for (u = 1; u <= 48; u++) { n = 8 + (u <= 4 ? 20 : int(rand() * 40)); s = u <= 4 ? 1 : u
        for (k = 0; k < n; k++) { it = 1 + int(rand() * rand() * 90); r = 0.5 + int(rand() * 10) / 2
            if (u <= 4) { it = 1 + (k * 7) % 40; r = 1 + (k * 3) % 5 }
            if (u <= 4 && k >= 26) r = 1 + (k + u) % 5
            printf "%d,%d,%.1f,%d,%d\n", u, it, r, 964980000 + 1000 * s + 37 * k, (r >= 3.5) != (k % 7 == 0) } } }' \
    > "$T/ratings.csv"
awk 'BEGIN { split("Action,Comedy,Drama,Thriller,Romance", g, ","); print "movieId,title,genres"
    for (m = 1; m <= 90; m++) printf "%d,Movie %d (%d),%s|%s\n", m, m, 1990 + m % 20, g[1 + m % 5], g[1 + (m * 3) % 5] }' \
    > "$T/movies.csv"
awk 'BEGIN { print "userId,age"; for (u = 1; u <= 48; u++) printf "%d,%d\n", u, u <= 4 ? 25 : 18 + u % 5 * 10 }' \
    > "$T/users.csv"
"$FS" data import --format csv "$T/ratings.csv" --items "$T/movies.csv" --event-cols rating:float,click \
    --user-features "$T/users.csv" --user-key userId -o "$T/r.h5" >/dev/null || { fail "import"; finish; }

TASKS="train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5"
R="data.path=$T/r.h5 $TASKS data.split=last:20% train.batch_size=12 features.item=genres"

# run NAME P [overrides]: a short ranking run, metrics in $T/NAME.jsonl
run() {
    name=$1 np=$2; shift 2
    if "$MPIRUN" -np "$np" "$FS" train "$IN" $R train.log_every=1 "output.metrics=$T/$name.jsonl" \
        "$@" >"$T/$name.out" 2>&1; then
        :
    else
        fail "train $name: $(tail -5 "$T/$name.out")"
    fi
}
# field FILE SPLIT KEY: KEY of the last eval line of SPLIT
field() { sed -n "s/.*\"split\":\"$2\".*\"$3\":\([^,}]*\).*/\1/p" "$1" | tail -1; }

# --- exact metrics at P = 1, 2, 3 (with tied scores) ---------------------------
for np in 1 2 3; do
    run m$np $np train.max_steps=6 train.baseline=on "debug.rank_dump=$T/d$np"
    for split in val test; do
        if "$PY" "$TOP_SRCDIR/tests/rank_metrics.py" "$T/m$np.jsonl" $split "$T/d$np-$split.csv" \
            like:binary rating:regression > "$T/rm.out" 2>&1; then
            pass "P=$np $split: metrics = their recomputation ($(grep -c diff "$T/rm.out") values)"
        else
            fail "P=$np $split metrics: $(grep -E 'FAIL|Error' "$T/rm.out" | head -5)"
        fi
    done
    ties=$(sed -n 's/.*test like: [0-9]* candidates, \([0-9]*\) tied.*/\1/p' "$T/rm.out")
    [ "${ties:-0}" -gt 0 ] || fail "P=$np: no tied scores in the test split"
done
grep -q '"split":"test-baseline-global".*"like.auc":0.5,' "$T/m1.jsonl" ||
    fail "global baseline AUC: $(grep test-baseline-global "$T/m1.jsonl")"
for b in item user user+item; do
    grep -q "\"split\":\"test-baseline-$b\".*\"like.gauc\"" "$T/m2.jsonl" || fail "baseline $b missing"
done

# --- the losses on any rank count, with an embedding group ---------------------
F="features.user=id,age features.event=click" # id: the user id's table (users rows)
run s1 1 train.max_steps=8 train.final_eval=off $F
run s2 2 train.max_steps=8 train.final_eval=off $F
run s4 4 train.max_steps=8 train.final_eval=off $F
run s4g 4 train.max_steps=8 train.final_eval=off $F parallel.embedding_group=2 features.placement=sharded
same_losses "$T/s1.jsonl" "$T/s2.jsonl" "sum: P=2 vs P=1" 0 1e-6
same_losses "$T/s1.jsonl" "$T/s4.jsonl" "sum: P=4 vs P=1" 0 1e-6
same_losses "$T/s1.jsonl" "$T/s4g.jsonl" "sum: P=4, embedding group 2, sharded vs P=1" 0 1e-6
run i1 1 train.max_steps=8 train.final_eval=off $F model.actions=interleave model.type=sasrec
run i3 3 train.max_steps=8 train.final_eval=off $F model.actions=interleave model.type=sasrec \
    parallel.overlap=none
same_losses "$T/i1.jsonl" "$T/i3.jsonl" "interleave (SASRec): P=3 vs P=1" 0 1e-6
run i3p 3 train.max_steps=8 train.final_eval=off $F model.actions=interleave model.type=sasrec \
    parallel.overlap=prefetch
same_losses "$T/i3.jsonl" "$T/i3p.jsonl" "ranking with features at P=3: overlap=prefetch vs none" 0 0

# --- model.last_layer = targets: the full layer's losses and metrics -----------
# (~1e-7 apart, not bit for bit: BLAS sums the rows read apart from the others)
run st 1 train.max_steps=8 train.final_eval=off $F model.last_layer=targets
same_losses "$T/s1.jsonl" "$T/st.jsonl" "sum: last_layer targets vs full" 0 1e-6
run ih 1 train.max_steps=8 $F model.actions=interleave
run iht 1 train.max_steps=8 $F model.actions=interleave model.last_layer=targets
same_losses "$T/ih.jsonl" "$T/iht.jsonl" "interleave: last_layer targets vs full" 0 1e-6
same_evals "$T/ih.jsonl" "$T/iht.jsonl" "interleave, evaluation: last_layer targets vs full" 1e-6
run ihf 1 train.max_steps=8 $F model.actions=interleave model.last_layer=targets device.type=fake
same_losses "$T/iht.jsonl" "$T/ihf.jsonl" "last_layer targets: fake device vs cpu" 0 0
same_evals "$T/iht.jsonl" "$T/ihf.jsonl" "last_layer targets, evaluation: fake device vs cpu" 0

# --- parallel.split_long: every training sequence forced into K chunks
# (debug.split_chunks) on several ranks, with contextual tokens, an event
# feature, model.bias and model.recency: the losses (1e-6) and the
# evaluation's metrics (which never split: 1e-6) as the unsplit run's, at
# P = 1, 2, 4, summed and interleaved actions; the fake device as the CPU
L="train.max_steps=6 $F model.bias=on model.recency=4"
SL="parallel.split_long=auto"
was_cut() { # METRICS NAME: the run cut sequences
    n=$(grep -o '"split_sequences":[0-9]*' "$1" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
    [ "$n" -gt 0 ] || fail "$2: nothing was cut"
}
# shellcheck disable=SC2086
run u1 1 $L
for c in 1:2 2:3 4:4; do
    np=${c%:*} k=${c#*:}
    # shellcheck disable=SC2086
    run "l$np" "$np" $L $SL "debug.split_chunks=$k"
    same_losses "$T/u1.jsonl" "$T/l$np.jsonl" "split_long, sum: P=$np, $k chunks vs unsplit" 0 1e-6
    same_evals "$T/u1.jsonl" "$T/l$np.jsonl" "split_long, sum: P=$np, $k chunks vs unsplit" 1e-6
    was_cut "$T/l$np.jsonl" "split_long P=$np"
done
# shellcheck disable=SC2086
run li1 1 $L model.actions=interleave
# shellcheck disable=SC2086
run li4 4 $L model.actions=interleave $SL debug.split_chunks=3
same_losses "$T/li1.jsonl" "$T/li4.jsonl" "split_long, interleave: P=4, 3 chunks vs unsplit" 0 1e-6
same_evals "$T/li1.jsonl" "$T/li4.jsonl" "split_long, interleave: P=4, 3 chunks vs unsplit" 1e-6
# shellcheck disable=SC2086
run lt2 2 $L model.actions=interleave model.last_layer=targets $SL debug.split_chunks=3
same_losses "$T/li1.jsonl" "$T/lt2.jsonl" "split_long and last_layer targets: P=2 vs unsplit" 0 1e-6
same_evals "$T/li1.jsonl" "$T/lt2.jsonl" "split_long and last_layer targets: P=2 vs unsplit" 1e-6
# shellcheck disable=SC2086
FREESCALE_FAKE_GPUS=fake0,fake1 run lf2 2 $L $SL debug.split_chunks=3 device.type=fake
same_losses "$T/l2.jsonl" "$T/lf2.jsonl" "split_long: the fake device as the CPU" 0 0

# --- resume on another rank count ----------------------------------------------
run full 2 train.max_steps=8 train.final_eval=off "output.checkpoint_dir=$T/ckf" \
    train.checkpoint_every=4
run half 3 train.max_steps=8 train.final_eval=off "train.resume=$T/ckf/ckpt-4.h5"
same_losses "$T/full.jsonl" "$T/half.jsonl" "resumed P=2 -> P=3 at step 4" 4 1e-6

# --- one checkpoint evaluated at P = 1, 2, 3: the same bits ---------------------
for np in 1 2 3; do
    run e$np $np "train.resume=$T/ckf/ckpt-8.h5" train.max_steps=8
done
for np in 2 3; do
    for key in like.auc like.gauc like.ne rating.mse; do
        a=$(field "$T/e1.jsonl" test $key) b=$(field "$T/e$np.jsonl" test $key)
        [ -n "$a" ] && [ "$a" = "$b" ] || fail "checkpoint at P=$np: test $key $b, at P=1 $a"
    done
done
pass "one checkpoint, P = 1, 2, 3: test like.auc $(field "$T/e1.jsonl" test like.auc) each time"

# --- keep_best follows train.select's validation AUC --------------------------
run kb 2 train.epochs=3 train.eval_every=1 train.keep_best=on "output.checkpoint_dir=$T/ckb"
grep -q "keep_best: validation like AUC" "$T/kb.out" || fail "keep_best line: $(grep keep_best "$T/kb.out")"
grep -q '"split":"test-last"' "$T/kb.jsonl" || fail "no test-last line with keep_best"

# --- score ------------------------------------------------------------------
"$PY" "$TOP_SRCDIR/tests/rank_truncate.py" "$T/r.h5" "$T/hist.h5" "$T/pairs.csv" last:20% ||
    fail "rank_truncate"
CK=$T/ckf/ckpt-8.h5
for np in 1 2; do
    expect_ok "$MPIRUN" -np $np "$FS" score "$CK" "data.path=$T/hist.h5" --pairs "$T/pairs.csv" \
        -o "$T/sc$np.csv"
done
cmp -s "$T/sc1.csv" "$T/sc2.csv" && pass "score: the same file at P = 1 and 2" ||
    fail "score differs between P = 1 and 2"
expect_ok "$MPIRUN" -np 2 "$FS" score "$CK" "data.path=$T/hist.h5" --pairs "$T/pairs.csv" -o "$T/sc.h5"
"$PY" -c '
import sys, h5py, numpy as np
sys.path.insert(0, sys.argv[1])
from rank_metrics import auc
s = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1, usecols=(2, 3))
lab = np.genfromtxt(sys.argv[3], delimiter=",", names=True)
y = (lab["rating"] >= 4).astype(float)
a, want = auc(y, s[:, 0]), float(sys.argv[5])
h = h5py.File(sys.argv[4], "r")
same = np.array_equal(h["scores"][:], s) and h.attrs["tasks"] == "like,rating"
print(f"score AUC {a:.17g}, evaluation {want:.17g}, h5 = csv: {same}")
sys.exit(0 if abs(a - want) <= 1e-6 and same else 1)
' "$TOP_SRCDIR/tests" "$T/sc1.csv" "$T/pairs-labels.csv" "$T/sc.h5" "$(field "$T/e1.jsonl" test like.auc)" \
    > "$T/auc.out" 2>&1 && pass "$(cat "$T/auc.out")" || fail "score AUC: $(cat "$T/auc.out")"
# bad pairs: FILE:LINE, nothing written
u=$(sed -n 2p "$T/pairs.csv" | cut -d, -f1) i=$(sed -n 2p "$T/pairs.csv" | cut -d, -f2)
printf 'user,item\n%s,%s\n99999,%s\n' "$u" "$i" "$i" > "$T/p1.csv"
expect_error "p1.csv:3: user '99999' is not in the dataset" \
    "$FS" score "$CK" "data.path=$T/hist.h5" --pairs "$T/p1.csv" -o "$T/bad.csv"
printf 'user,item\n%s,777\n' "$u" > "$T/p2.csv"
expect_error "p2.csv:2: item '777' is not in the dataset" \
    "$FS" score "$CK" "data.path=$T/hist.h5" --pairs "$T/p2.csv" -o "$T/bad.csv"
printf 'user,item,time\n%s,%s,12\n%s,%s\n' "$u" "$i" "$u" "$i" > "$T/p3.csv"
expect_error "p3.csv:3: 2 fields, expected 3" \
    "$FS" score "$CK" "data.path=$T/hist.h5" --pairs "$T/p3.csv" -o "$T/bad.csv"
printf 'user,item,time\n%s,%s,soon\n' "$u" "$i" > "$T/p4.csv"
expect_error "p4.csv:2: time 'soon' is not an integer" \
    "$FS" score "$CK" "data.path=$T/hist.h5" --pairs "$T/p4.csv" -o "$T/bad.csv"
printf 'id,item\n' > "$T/p5.csv"
expect_error "p5.csv:1: expected a header line naming the user and item columns" \
    "$FS" score "$CK" "data.path=$T/hist.h5" --pairs "$T/p5.csv" -o "$T/bad.csv"
no_file "$T/bad.csv"
# on 2 ranks: rank 0's error reading the pairs, once, no MPI_ABORT
error_once 2 "p1.csv:3: user '99999' is not in the dataset" \
    score "$CK" "data.path=$T/hist.h5" --pairs "$T/p1.csv" -o "$T/bad.csv"
error_once 2 "p4.csv:2: time 'soon' is not an integer" \
    score "$CK" "data.path=$T/hist.h5" --pairs "$T/p4.csv" -o "$T/bad.csv"
error_once 2 "score: --pairs $T/none.csv: cannot open" \
    score "$CK" "data.path=$T/hist.h5" --pairs "$T/none.csv" -o "$T/bad.csv"
error_once 2 "is a ranking model" recommend "$CK" --top 5 -o "$T/bad.csv"
no_file "$T/bad.csv"
expect_error "is a ranking model" "$FS" recommend "$CK" --top 5 -o "$T/bad.csv"
run ret 1 train.task=retrieval train.tasks= train.max_steps=2 data.split=loo \
    "output.checkpoint_dir=$T/ckr" train.final_eval=off
expect_error "is a retrieval model" "$FS" score "$T/ckr/ckpt-2.h5" --pairs "$T/p1.csv" -o "$T/bad.csv"
expect_ok "$FS" export "$CK" -o "$T/model.h5"
"$PY" -c 'import h5py, sys; h = h5py.File(sys.argv[1], "r"); g = h["head"]
assert h.attrs["task"] == "ranking" and g.attrs["tasks"] == "like,rating", dict(g.attrs)
assert g["w0"].shape == (16, 128) and g["b1"].shape == (2,) and g["mean"].shape == (2,), list(g)
assert g["mean"][0] == 0 and g["std"][1] > 0' "$T/model.h5" && pass "export: /head" ||
    fail "export /head"

# --- model.calibrate = platt ----------------------------------------------------
# On a planted set (a signal in 8 steps): the training and the test's order
# are the run's without it (test AUC, GAUC the same bits); the a, b the log
# prints are numpy's logistic regression of the validation labels on the
# validation logits (dumped as they are), whose loss they do not raise,
# and model.calibrate = temperature's a (b = 0) numpy's fit of a alone;
# the test's logits are a z + b of the uncalibrated run's (its logloss
# recomputed); the checkpoint holds them: evaluated at P = 1 and resumed
# at step 4 it gives the test of the uninterrupted run bit for bit, and
# score's logits are a z + b of the uncalibrated checkpoint's.
"$FS" data gen --users 100 --items 50 --length uniform:10,30 --timestamps --labels planted:4 \
    --seed 1 -o "$T/pl.h5" >/dev/null || fail "data gen --labels planted"
C="data.path=$T/pl.h5 train.tasks=click:binary:click,rating:regression:rating:0.5 data.split=last:4"
C="$C features.item= train.max_steps=8 output.checkpoint_dir=$T/ckc train.checkpoint_every=4"
# shellcheck disable=SC2086
run cr 2 $C "debug.rank_dump=$T/cr" output.checkpoint_dir="$T/ckn"
# shellcheck disable=SC2086
run cc 2 $C "debug.rank_dump=$T/cc" model.calibrate=platt
# shellcheck disable=SC2086
run ct 2 $C model.calibrate=temperature output.checkpoint_dir=
# same_test REF "KEYS" RUN...: each RUN's test KEYS are REF's, the same bits
same_test() {
    ref=$1 keys=$2
    shift 2
    for key in $keys; do
        a=$(field "$T/$ref.jsonl" test "$key")
        for r in "$@"; do
            b=$(field "$T/$r.jsonl" test "$key")
            [ -n "$a" ] && [ "$a" = "$b" ] || fail "model.calibrate: test $key of $r $b, of $ref $a"
        done
    done
}
same_test cr "click.auc click.gauc rating.mse" cc ct
fit=$(sed -n 's/^model.calibrate: click a \([^ ]*\) b \([^ ]*\) .*/\1 \2/p' "$T/cc.out" | tail -1)
tfit=$(sed -n 's/^model.calibrate: click a \([^ ]*\) b \([^ ]*\) .*/\1 \2/p' "$T/ct.out" | tail -1)
"$PY" -c '
import sys, numpy as np
def rows(path):
    d = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding=None)
    d = d[d["task"] == "click"]
    return d["score"].astype(float), d["label"].astype(float)
def loss(z, y, a, b):
    u = a * z + b
    return np.mean(np.logaddexp(0, u) - y * u)
z, y = rows(sys.argv[1])
w = np.array([1.0, 0.0])
for _ in range(50):  # Newton on the mean loss of a z + b
    p = 1 / (1 + np.exp(-(w[0] * z + w[1])))
    X = np.stack([z, np.ones_like(z)], 1)
    w -= np.linalg.solve(X.T @ (X * (p * (1 - p))[:, None]), X.T @ (p - y))
a, b = (float(np.float32(v)) for v in sys.argv[3].split())  # as printed: floats
ok = abs(a - w[0]) <= 1e-5 * abs(w[0]) and abs(b - w[1]) <= 1e-5 * (1 + abs(w[1])) and a > 0
ok = ok and loss(z, y, a, b) <= loss(z, y, 1, 0)
t, tb = (float(np.float32(v)) for v in sys.argv[6].split())  # temperature: b = 0
v = 1.0
for _ in range(50):
    p = 1 / (1 + np.exp(-v * z))
    v -= np.sum((p - y) * z) / np.sum(p * (1 - p) * z * z)
ok = ok and tb == 0 and abs(t - v) <= 1e-5 * v and loss(z, y, a, b) <= loss(z, y, t, 0)
zt, yt = rows(sys.argv[2])
zc, _ = rows(sys.argv[4])
ok = ok and np.array_equal(zc, a * zt + b) and abs(loss(zt, yt, a, b) - float(sys.argv[5])) < 1e-9
print(f"a {a} b {b} (numpy {w[0]:.7g} {w[1]:.7g}), validation loss {loss(z, y, 1, 0):.6f} -> "
      f"{loss(z, y, a, b):.6f}, test logloss {float(sys.argv[5]):.6f}; temperature a {t} "
      f"(numpy {v:.7g})")
sys.exit(0 if ok else 1)
' "$T/cr-val.csv" "$T/cr-test.csv" "$fit" "$T/cc-test.csv" "$(field "$T/cc.jsonl" test click.logloss)" "$tfit" \
    > "$T/cal.out" 2>&1 && pass "model.calibrate: $(cat "$T/cal.out")" ||
    fail "model.calibrate: the fit '$fit': $(cat "$T/cal.out")"
# shellcheck disable=SC2086
run ce 1 $C model.calibrate=platt "train.resume=$T/ckc/ckpt-8.h5" output.checkpoint_dir=
# shellcheck disable=SC2086
run cu 2 $C model.calibrate=platt "train.resume=$T/ckc/ckpt-4.h5" output.checkpoint_dir="$T/ckd"
same_test cc "click.ne click.logloss click.accuracy click.auc" ce cu
pass "model.calibrate: the checkpoint at P = 1 and resumed at step 4: test NE $(field "$T/cc.jsonl" test click.ne) each time"
"$PY" "$TOP_SRCDIR/tests/rank_truncate.py" "$T/pl.h5" "$T/plh.h5" "$T/plp.csv" last:4 ||
    fail "rank_truncate"
for m in n c; do
    expect_ok "$MPIRUN" -np 2 "$FS" score "$T/ck$m/ckpt-8.h5" "data.path=$T/plh.h5" \
        --pairs "$T/plp.csv" -o "$T/plsc$m.h5"
done
"$PY" -c '
import sys, h5py, numpy as np
r, c = (h5py.File(f, "r") for f in sys.argv[1:3])
a, b = (float(np.float32(v)) for v in sys.argv[3].split())
zr, zc = r["logits"][:], c["logits"][:]
ok = np.array_equal(zc[:, 0], a * zr[:, 0] + b) and np.array_equal(zc[:, 1], zr[:, 1])
ok = ok and np.abs(c["scores"][:, 0] - 1 / (1 + np.exp(-zc[:, 0]))).max() < 1e-15
print(f"score: click logits a z + b of the uncalibrated model'"'"'s ({len(zr)} pairs), rating as it is")
sys.exit(0 if ok else 1)
' "$T/plscn.h5" "$T/plscc.h5" "$fit" > "$T/cals.out" 2>&1 &&
    pass "model.calibrate: $(cat "$T/cals.out")" || fail "model.calibrate: $(cat "$T/cals.out")"
VT=$("$PY" -c 'import h5py, numpy as np, sys; t = np.unique(h5py.File(sys.argv[1], "r")["timestamps"][:])
i = len(t) // 2; print(f"{t[i] + 1},{t[i + 1]}")' "$T/r.h5") # a validation part without events

# --- refused before training -----------------------------------------------------
ok() { "$FS" train "$IN" "data.path=$T/r.h5" train.max_steps=1 train.final_eval=off "$@"; }
expect_error "train.select = nope: no such task" ok $TASKS train.select=nope
expect_error "task like: $T/r.h5 has no /events/stars (its event columns: click, rating" \
    ok train.task=ranking train.tasks=like:binary:stars\>=4
expect_error "task c: regression on /events/click, a categorical column" \
    ok train.task=ranking train.tasks=c:regression:click
expect_error "data.split = last:0: K of last:K must be an integer >= 1" ok $TASKS data.split=last:0
expect_error "train.task = ranking needs train.tasks" ok train.task=ranking
expect_error "train.tasks = x:binary:click: for train.task = ranking" ok train.tasks=x:binary:click
expect_error "kind 'bin' is not binary or regression" ok train.task=ranking train.tasks=x:bin:click
expect_error "data.split = hstu: validation and test share" ok $TASKS data.split=hstu
expect_error "retrieval takes loo or hstu" ok data.split=last:2
expect_error "a regression task has no AUC" ok $TASKS train.select=rating
expect_error "with parallel.split_long = auto and model.factors = 2: not supported" \
    ok $TASKS parallel.split_long=auto model.bias=on model.factors=2
expect_error "model.last_layer = targets: for model.type = hstu with train.task = ranking, whose" \
    ok model.last_layer=targets
expect_error "(this run: model.type = sasrec, train.task = ranking)" \
    ok $TASKS model.type=sasrec model.last_layer=targets
expect_ok ok $TASKS device.type=fake train.final_eval=on # its evaluation on a device too
expect_error "model.calibrate: for train.task = ranking (this run: retrieval)" ok model.calibrate=platt
expect_error "model.calibrate = platt: train.tasks = r:regression:rating has no binary task" \
    ok train.task=ranking train.tasks=r:regression:rating model.calibrate=platt
expect_error "model.calibrate = platt: not with train.schedule = stream" \
    ok $TASKS model.calibrate=platt train.schedule=stream data.window=1d
expect_error "model.calibrate = platt: data.split = time:$VT leaves $T/r.h5 no validation events" \
    ok $TASKS model.calibrate=platt "data.split=time:$VT"
expect_error "train.keep_best follows the validation AUC of a binary task" \
    ok train.task=ranking train.tasks=r:regression:rating train.keep_best=on output.checkpoint_dir=$T/x
finish
