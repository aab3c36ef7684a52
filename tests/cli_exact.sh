#!/usr/bin/env bash
# cli_exact: train.exact_sums = on (doc/training.md, "The same bits on any
# number of ranks"): P = 1, 2, 3, 4 give the same losses bit for bit (the
# metrics file's full-precision losses compared with cmp, not a tolerance)
#   - retrieval on tiny.in's data for 300 steps (dense table, adagrad);
#   - ranking (a binary and a regression task, 300 steps) with event and
#     user features, each task's loss too;
#   - at P = 1 and 3 (CI's time): retrieval on a dynamic table with
#     admission and ttl eviction, adam, in-batch negatives shared by blocks
#     of 4 positions (train.shared_negatives: the GEMM form of the loss; the
#     shared unadmitted row's gradient over the job); SASRec (two layers, two
#     heads, BCE: LayerNorms and linear layers); SASRec ranking with
#     interleaved action tokens;
#   - a stream of 14 daily windows over a dynamic table, the window lines'
#     losses and metrics too;
# the checkpoints' dense tensors and rows too (h5py); the same runs without
# exact sums differ at P = 3 (what the option is for: the comparison can
# fail); and the paths it does not cover (item features, projections,
# model.bias, the full softmax, split_long, gradient codecs, devices)
# refused by name.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in

"$FS" data gen --users 64 --items 200 --length uniform:5,40 --timestamps --seed 4 \
    -o "$T/tiny.h5" >/dev/null || { fail "data gen"; finish; }

# run NAME P ARGS...: metrics in $T/NAME.jsonl, the losses in $T/NAME.loss
run() {
    name=$1 np=$2; shift 2
    if "$MPIRUN" -np "$np" "$FS" train "$IN" train.log_every=1 "output.metrics=$T/$name.jsonl" \
        "$@" >"$T/$name.out" 2>&1; then
        sed -n 's/.*"event":"train".*"loss":\([^,]*\),.*/\1/p' "$T/$name.jsonl" >"$T/$name.loss"
    else
        fail "train $name (P=$np): $(tail -5 "$T/$name.out")"
        : >"$T/$name.loss"
    fi
}
# same NAME...: the losses of NAME.1 and of each NAME.P identical
same() {
    for name in "$@"; do
        base=${name%.*}
        n=$(wc -l <"$T/$base.1.loss")
        if [ "$n" -gt 0 ] && cmp -s "$T/$base.1.loss" "$T/$name.loss"; then
            pass "$name: the same $n losses as P=1, bit for bit"
        else
            fail "$name: losses differ from P=1: $(paste "$T/$base.1.loss" "$T/$name.loss" |
                awk '$1 != $2' | head -3 | tr '\n' ' ')"
        fi
    done
}

E=train.exact_sums=on
# --- retrieval, dense table, 300 steps ------------------------------------------
for np in 1 2 3 4; do
    run dense.$np $np data.path="$T/tiny.h5" train.epochs=75 $E "output.checkpoint_dir=$T/ck$np"
done
same dense.2 dense.3 dense.4
n=$(wc -l <"$T/dense.1.loss")
[ "$n" -eq 300 ] && pass "300 steps" || fail "expected 300 steps, got $n"
if have_h5py; then
    "$PY" - "$T"/ck{1,2,3,4}/ckpt-300.h5 >"$T/h5.out" 2>&1 <<'EOF'
import sys, h5py, numpy as np
def walk(p):
    out = {}
    h5py.File(p, "r").visititems(lambda n, o: out.__setitem__(n, o[()])
                                 if isinstance(o, h5py.Dataset) else None)
    return out
a = walk(sys.argv[1])
for p in sys.argv[2:]:
    b = walk(p)
    bad = [k for k in a if k not in b or np.asarray(a[k]).shape != np.asarray(b[k]).shape
           or not np.array_equal(a[k], b[k])]
    if bad:
        print("FAIL", p, bad[:5]); sys.exit(1)
print("ok", len(a), "datasets")
EOF
    [ $? -eq 0 ] && pass "checkpoints at P = 2, 3, 4: every dataset equal to P = 1's ($(cat "$T/h5.out"))" ||
        fail "checkpoints differ: $(cat "$T/h5.out")"
fi
# the control: without exact sums the same runs differ at P = 3
run plain.1 1 data.path="$T/tiny.h5" train.epochs=5
run plain.3 3 data.path="$T/tiny.h5" train.epochs=5
if [ -s "$T/plain.1.loss" ] && ! cmp -s "$T/plain.1.loss" "$T/plain.3.loss"; then
    pass "without exact sums P = 3 differs from P = 1 (the comparison can fail)"
else
    fail "without exact sums P = 3 gave P = 1's losses: the test cannot tell"
fi

# --- dynamic table: admission, ttl, adam, in-batch negatives --------------------
DYN="data.path=$T/tiny.h5 train.epochs=15 embedding.dynamic=on embedding.admit=3
     embedding.evict=ttl:8 embedding.optimizer=adam train.negatives_from=in_batch
     train.shared_negatives=4"
for np in 1 3; do # (P = 2 and 4 as the dense runs: CI's time)
    run dyn.$np $np $DYN $E
done
same dyn.3
grep -q 'unadmitted [1-9]' "$T/dyn.1.out" && pass "the shared row trained (unadmitted ids seen)" ||
    fail "no unadmitted ids in the dynamic run"

# --- SASRec: its LayerNorms and linear layers, BCE ------------------------------
for np in 1 3; do
    run sas.$np $np data.path="$T/tiny.h5" train.epochs=15 model.type=sasrec model.layers=2 \
        model.heads=2 train.loss=bce $E
done
same sas.3

# --- ranking with event and user features ---------------------------------------
awk 'BEGIN { srand(5); print "userId,movieId,rating,timestamp,click"
    for (u = 1; u <= 48; u++) { n = 8 + int(rand() * 40)
        for (k = 0; k < n; k++) { r = 0.5 + int(rand() * 10) / 2
            printf "%d,%d,%.1f,%d,%d\n", u, 1 + int(rand() * rand() * 90), r,
                964980000 + 1000 * u + 37 * k, (r >= 3.5) != (k % 7 == 0) } } }' >"$T/ratings.csv"
awk 'BEGIN { print "userId,age"; for (u = 1; u <= 48; u++) printf "%d,%d\n", u, 18 + u % 5 * 10 }' \
    >"$T/users.csv"
"$FS" data import --format csv "$T/ratings.csv" --event-cols rating:float,click \
    --user-features "$T/users.csv" --user-key userId -o "$T/r.h5" >/dev/null || fail "import"
RANK="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
      data.split=last:20% train.batch_size=12 train.epochs=75 train.final_eval=off
      features.user=age features.event=click"
for np in 1 2 3 4; do
    run rank.$np $np $RANK $E
done
same rank.2 rank.3 rank.4
for np in 2 3 4; do # each task's loss of the progress line too
    sed -n 's/.*"event":"train".*"loss.like":\([^,]*\),.*/\1/p' "$T/rank.1.jsonl" >"$T/a.like"
    sed -n 's/.*"event":"train".*"loss.like":\([^,]*\),.*/\1/p' "$T/rank.$np.jsonl" >"$T/b.like"
    [ -s "$T/a.like" ] && cmp -s "$T/a.like" "$T/b.like" &&
        pass "ranking P=$np: the task like's losses bit for bit" ||
        fail "ranking P=$np: the task like's losses differ (or are missing)"
done
run rsas.1 1 $RANK $E model.type=sasrec model.actions=interleave
run rsas.3 3 $RANK $E model.type=sasrec model.actions=interleave
same rsas.3

# --- a stream of 14 windows over a dynamic table --------------------------------
"$FS" data gen --stream --days 14 --users 300 --items 400 --new-items-per-day 30 --drift 0.3 \
    --seed 2 -o "$T/st.h5" >/dev/null || fail "data gen --stream"
STREAM="data.path=$T/st.h5 embedding.dynamic=on embedding.admit=2 train.schedule=stream
        data.window=1d"
for np in 1 2 3 4; do
    run stream.$np $np $STREAM $E
    # the window lines without their timings and memory
    grep '"event":"window"' "$T/stream.$np.jsonl" |
        sed 's/"\(samples_per_s\|tokens_per_s\|train_s\|seconds\|peak_mib\|peak_mib_max\)":[^,}]*,\?//g' >"$T/stream.$np.win"
done
same stream.2 stream.3 stream.4
w=$(wc -l <"$T/stream.1.win")
for np in 2 3 4; do
    [ "$w" -ge 13 ] && cmp -s "$T/stream.1.win" "$T/stream.$np.win" &&
        pass "stream P=$np: $w window lines (losses, metrics) as P=1's" ||
        fail "stream P=$np: window lines differ ($w windows)"
done

# --- what it does not cover: refused by name ------------------------------------
ok() { "$MPIRUN" -np 1 "$FS" train "$IN" data.path="$T/tiny.h5" train.max_steps=1 $E "$@"; }
expect_error "train.exact_sums = on with model.bias = on" \
    "$MPIRUN" -np 1 "$FS" train "$IN" $RANK $E model.bias=on
expect_error "train.exact_sums = on with features.dim or features.dims" \
    "$MPIRUN" -np 1 "$FS" train "$IN" $RANK $E features.dim=8
expect_error "train.exact_sums = on with features.item" ok features.item=genres
expect_error "train.exact_sums = on with train.loss = full" ok train.loss=full
expect_error "train.exact_sums = on with parallel.split_long = auto" ok parallel.split_long=auto
expect_error "train.exact_sums = on with parallel.grads_codec" ok parallel.grads_codec=bf16
expect_error "train.exact_sums = on with parallel.embedding_group" ok parallel.embedding_group=1
expect_error "train.exact_sums = on: exact sums run on the CPU backend alone" ok device.type=fake

finish
