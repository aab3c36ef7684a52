#!/bin/sh
# cli_rank_bias: model.bias = on (per-item and per-user terms of each
# task's logit; model/task_bias.h, train/step_bias.c):
#   - the losses agree at P = 1, 2, 3 (1e-6), with a resume on another
#     rank count (their gradients: tests/grad_rank.sh, case 2);
#   - the initial biases are the training labels' smoothed user+item means
#     (recomputed with NumPy from the dataset: 1e-5), read from a
#     checkpoint written after one step at a learning rate of 1e-12;
#   - model.recency (the history terms, model/task_recency.h): the losses
#     and the test metrics agree at P = 1, 2, 3 and on the fake device
#     (the terms uploaded to device memory; 1e-6), and the start-up
#     fit (the user terms' scale and the history matrix, train/step_bias.c)
#     is recomputed with NumPy's Newton steps from the dataset (1e-4);
#     export writes the terms' item centres;
#   - model.factors (the factor terms, model/task_factor.h, with
#     model.recency): the losses and the test metrics agree at P = 1, 2, 3,
#     on the fake device and resumed at another rank count (1e-6); export
#     writes the factors and their matrix; model.factors_lr (their own
#     rate): given as train.lr the run without it (bit for bit), Adam's
#     first step of M at that rate against the head's at train.lr, P = 1
#     against P = 2; auto: the same choice at P = 1 and 2, the run with
#     the choice given by hand the same (bit for bit; with model.recency
#     and model.bias_prior = auto, whose search the candidates make once
#     for the run: the same lines and losses as the run searching alone),
#     resumed: the stored choice reused without a search, the losses the
#     uninterrupted run's;
#     model.factor_ridge (the user's factor a ridge fit; its gradient:
#     tests/grad_rank.sh, case 5): the losses and the test metrics agree at
#     P = 1, 2 and on the fake device (1e-6), and move off the shrunk
#     mean's; refused without model.factors or above 16 factors;
#     model.factor_feature (the factor rows keyed by an item feature's
#     values; its gradient: tests/grad_rank.sh, case 6): the losses and
#     the test metrics agree at P = 1, 2, on the fake device and resumed at
#     another rank count (1e-6), move off the items' own rows', export
#     writes the name and the values' rows; refused for an unknown name, an
#     events feature, a multi-valued or a float feature (naming the
#     dataset) and without model.factors;
#   - model.bias_prior = auto, model.recency = auto: the grid searches on
#     the validation events recomputed with NumPy (tests/bias_auto_oracle.py:
#     each value's loss, the choices of the item and the user rows' priors,
#     the chosen fit's rows), the same losses at P = 1 and 3 and given by
#     hand ("I,U"), the searches' log lines the same at P = 1 and 3 (the
#     fits shared among the ranks), the choices in the summary line; refused without
#     validation events or with a prior not a number, naming the file;
#   - debug.terms_only (the logits without the head's output, the
#     ablation of doc/quality.md): the losses and test metrics do not
#     depend on the sequence model (1 layer at P = 1 = 2 layers of another
#     width at P = 2 = the fake device, 1e-6), the first loss is
#     model.recency's run's (the head starts at 0), the later ones not;
#   - refused with train.task = retrieval, model.recency, model.bias_prior,
#     model.factors or debug.terms_only without model.bias, model.factors_lr
#     without model.factors, out of range
#     or not a number.
. "$(dirname "$0")/lib.sh"
need_mpirun
have_h5py || { echo "SKIP: $PY cannot import h5py and numpy"; exit 77; }
IN=$TOP_SRCDIR/input/tiny.in

awk 'BEGIN { srand(11); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 40; u++) { n = 6 + int(rand() * 30)
        for (k = 0; k < n; k++) printf "%d,%d,%.1f,%d\n", u, 1 + int(rand() * rand() * 60),
            0.5 + int(rand() * 10) / 2, 964980000 + 1000 * u + 37 * k } }' > "$T/ratings.csv"
"$FS" data import --format movielens "$T/ratings.csv" -o "$T/r.h5" >/dev/null || { fail "import"; finish; }

R="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
train.negatives=128 data.split=last:20% train.batch_size=10 model.bias=on train.log_every=1"
run() {
    name=$1 np=$2; shift 2
    # shellcheck disable=SC2086
    "$MPIRUN" -np "$np" "$FS" train "$IN" $R "output.metrics=$T/$name.jsonl" "$@" \
        >"$T/$name.out" 2>&1 || fail "train $name: $(tail -5 "$T/$name.out")"
}
run b1 1 train.max_steps=8 train.final_eval=off
run b2 2 train.max_steps=8 train.final_eval=off
run b3 3 train.max_steps=8 train.final_eval=off "output.checkpoint_dir=$T/ck" train.checkpoint_every=4
same_losses "$T/b1.jsonl" "$T/b2.jsonl" "model.bias: P=2 vs P=1" 0 1e-6
same_losses "$T/b1.jsonl" "$T/b3.jsonl" "model.bias: P=3 vs P=1" 0 1e-6
run r2 2 train.max_steps=8 train.final_eval=off "train.resume=$T/ck/ckpt-4.h5"
same_losses "$T/b3.jsonl" "$T/r2.jsonl" "model.bias: resumed P=3 -> P=2 at step 4" 4 1e-6
grep -q "per-item and per-user logit biases" "$T/b1.out" || fail "no log line of model.bias"

# the initial values: one step at lr 1e-12 (AdamW moves them by ~1e-12)
run z 2 train.max_steps=1 train.final_eval=off train.lr=1e-12 embedding.lr=1e-12 \
    "output.checkpoint_dir=$T/ckz" train.baseline_prior=3
"$PY" - "$T/r.h5" "$T/ckz/ckpt-1.h5" <<'EOF' > "$T/init.out" 2>&1 && pass "$(tail -1 "$T/init.out")" || fail "initial biases: $(cat "$T/init.out")"
import sys, h5py, numpy as np
ds, ck = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
off, items = ds["offsets"][:], ds["item_ids"][:]
y = ds["events/rating"][:].astype(np.float64)
U, N, prior = len(off) - 1, int(items.max()), 3.0
train = np.zeros(len(items), bool)
for u in range(U):  # last:20%: floor(20% of the events), at least 1, test and as many validate
    L = off[u + 1] - off[u]; k = max(int(L * 0.2), 1)
    train[off[u]:off[u + 1] - 2 * k] = True
user = np.repeat(np.arange(U), np.diff(off))
lab = [(y >= 4).astype(np.float64), None]
z = y[train]
mean, sd = z.mean(), z.std()
lab[1] = (y.astype(np.float32) - np.float32(mean)) / np.float32(sd)
s = lambda p: np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))
bi_w, bu_w = ck["dense/bias.item"][:].reshape(N + 1, 2), ck["dense/bias.user"][:].reshape(U, 2)
worst = 0
for k, binary in ((0, True), (1, False)):
    v = lab[k][train].astype(np.float64); it = items[train]; us = user[train]
    mu = v.mean()
    ni = np.bincount(it, minlength=N + 1); si = np.bincount(it, v, minlength=N + 1)
    bi = (si - ni * mu) / (ni + prior)
    nu = np.bincount(us, minlength=U); ru = np.bincount(us, v - mu - bi[it], minlength=U)
    bu = ru / (nu + prior); mu_i = np.bincount(us, bi[it], minlength=U) / np.maximum(nu, 1)
    want_i = s(mu + bi) if binary else mu + bi
    want_u = s(mu + mu_i + bu) - s(mu + mu_i) if binary else bu
    worst = max(worst, np.abs(bi_w[:, k] - want_i).max(), np.abs(bu_w[:, k] - want_u).max())
print(f"the initial biases = the smoothed user+item means recomputed (worst {worst:.2e})")
sys.exit(0 if worst <= 1e-5 else 1)
EOF
expect_error "model.bias = on: for train.task = ranking" \
    "$FS" train "$IN" "data.path=$T/r.h5" model.bias=on train.max_steps=1
# model.recency: P-invariant training and test metrics
run h1 1 train.max_steps=8 model.recency=4 train.epochs=1
run h2 2 train.max_steps=8 model.recency=4 train.epochs=1
run h3 3 train.max_steps=8 model.recency=4 train.epochs=1
run hf 1 train.max_steps=8 model.recency=4 train.epochs=1 device.type=fake
same_losses "$T/h1.jsonl" "$T/hf.jsonl" "model.recency: the fake device vs the CPU" 0 1e-6
same_losses "$T/h1.jsonl" "$T/h2.jsonl" "model.recency: P=2 vs P=1" 0 1e-6
same_losses "$T/h1.jsonl" "$T/h3.jsonl" "model.recency: P=3 vs P=1" 0 1e-6
same_test() { # A.jsonl B.jsonl WHAT: the last test line's metrics agree (1e-6)
    "$PY" - "$1" "$2" <<'EOF' && pass "$3: test metrics agree" || fail "$3: test metrics differ"
import json, sys
def test(f):
    return [l for l in map(json.loads, open(f)) if l.get("event") == "eval" and l.get("split") == "test"][-1]
a, b = test(sys.argv[1]), test(sys.argv[2])
keys = [k for k in a if k.startswith(("like.", "rating."))]
sys.exit(0 if keys and all(abs(a[k] - b[k]) <= 1e-6 * max(1, abs(a[k])) for k in keys) else 1)
EOF
}
for p in 2 3 f; do
    same_test "$T/h1.jsonl" "$T/h$p.jsonl" "model.recency: h$p vs h1"
done
grep -q "model.recency = 4: fitted on the training events" "$T/h1.out" || fail "no log line of the fit"

# debug.terms_only: the sequence model's part left out of the logits
run t1 1 train.max_steps=8 model.recency=4 train.epochs=1 debug.terms_only=on model.layers=1
run t2 2 train.max_steps=8 model.recency=4 train.epochs=1 debug.terms_only=on model.layers=2 \
    model.dim=32
run tf 1 train.max_steps=8 model.recency=4 train.epochs=1 debug.terms_only=on device.type=fake
same_losses "$T/t1.jsonl" "$T/t2.jsonl" "debug.terms_only: 2 layers of 32 at P=2 vs 1 layer of 16" 0 1e-6
same_losses "$T/t1.jsonl" "$T/tf.jsonl" "debug.terms_only: the fake device vs the CPU" 0 1e-6
same_test "$T/t1.jsonl" "$T/t2.jsonl" "debug.terms_only: t2 vs t1"
same_test "$T/t1.jsonl" "$T/tf.jsonl" "debug.terms_only: tf vs t1"
"$PY" - "$T/t1.jsonl" "$T/h1.jsonl" <<'EOF' && pass "debug.terms_only: the first loss is the full model's, the later ones not" || fail "debug.terms_only: the losses against the full model's"
import json, sys
loss = lambda f: [l["loss"] for l in map(json.loads, open(f)) if l.get("event") == "train"]
a, b = loss(sys.argv[1]), loss(sys.argv[2])
sys.exit(0 if abs(a[0] - b[0]) <= 1e-6 * abs(b[0]) and abs(a[3] - b[3]) > 1e-6 else 1)
EOF
expect_error "debug.terms_only = on needs model.bias = on" \
    "$FS" train "$IN" $R model.bias=off debug.terms_only=on train.max_steps=1

# the fit: one step at lr 1e-12, then the checkpoint's user rows and matrix
run hz 2 train.max_steps=1 train.final_eval=off train.lr=1e-12 embedding.lr=1e-12 \
    "output.checkpoint_dir=$T/ckh" model.recency=4 train.baseline_prior=3
"$PY" - "$T/r.h5" "$T/ckh/ckpt-1.h5" <<'EOF' > "$T/fit.out" 2>&1 && pass "$(tail -1 "$T/fit.out")" || fail "model.recency fit: $(cat "$T/fit.out")"
import sys, h5py, numpy as np
ds, ck = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
off, items = ds["offsets"][:], ds["item_ids"][:]
y = ds["events/rating"][:].astype(np.float64)
U, N, prior, lam, R0 = len(off) - 1, int(items.max()), 3.0, 2 ** (-1 / 4), 3.0
train = np.zeros(len(items), bool)
for u in range(U):
    L = off[u + 1] - off[u]; k = max(int(L * 0.2), 1)
    train[off[u]:off[u + 1] - 2 * k] = True
user = np.repeat(np.arange(U), np.diff(off))
z = y[train]
lab = np.stack([(y >= 4).astype(np.float64),
                ((y.astype(np.float32) - np.float32(z.mean())) / np.float32(z.std())).astype(np.float64)], 1)
s = lambda p: np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))
item0, user0, cen = np.zeros((N + 1, 2)), np.zeros((U, 2)), np.zeros((N + 1, 2))
for k, binary in ((0, True), (1, False)):
    v = lab[train, k]; it = items[train]; us = user[train]
    mu = v.mean()
    ni = np.bincount(it, minlength=N + 1); si = np.bincount(it, v, minlength=N + 1)
    bi = (si - ni * mu) / (ni + prior)
    nu = np.bincount(us, minlength=U); ru = np.bincount(us, v - mu - bi[it], minlength=U)
    bu = ru / (nu + prior); mu_i = np.bincount(us, bi[it], minlength=U) / np.maximum(nu, 1)
    item0[:, k] = s(mu + bi) if binary else mu + bi
    user0[:, k] = s(mu + mu_i + bu) - s(mu + mu_i) if binary else bu
    cen[:, k] = mu + bi
r = np.zeros((len(items), 2))  # each training event's terms over the user's earlier ones
for u in range(U):
    num, den = np.zeros(2), np.zeros(2)
    for e in range(off[u], off[u + 1]):
        if not train[e]:
            break
        r[e] = num / (den + R0)
        num, den = num * lam + lab[e] - cen[items[e]], den * lam + 1
A, scale = np.zeros((2, 2)), np.zeros(2)
for k, binary in ((0, True), (1, False)):
    X = np.concatenate([user0[user[train], k:k + 1], r[train]], 1); o = item0[items[train], k]
    t = lab[train, k]; th = np.array([1.0, 0, 0])
    for _ in range(8):
        eta = o + X @ th
        p = 1 / (1 + np.exp(-eta)) if binary else eta
        w = p * (1 - p) if binary else np.ones_like(eta)
        th = th + np.linalg.solve((X * w[:, None]).T @ X, X.T @ (t - p))
    scale[k], A[k] = th[0], th[1:]
A_w = ck["dense/bias.recency"][:].reshape(2, 2)
bu_w = ck["dense/bias.user"][:].reshape(U, 2)
worst = max(np.abs(A_w - A).max(), np.abs(bu_w - user0 * scale).max())
print(f"the fitted history matrix and user scales = NumPy's Newton fit (A {A.round(3).tolist()}, "
      f"scales {scale.round(3).tolist()}; worst {worst:.2e})")
sys.exit(0 if worst <= 1e-4 else 1)
EOF
# model.bias_prior = auto and model.recency = auto (the grids searched on the
# validation events): NumPy's search chooses the same, the same losses and
# rows; the same losses and search lines at P = 1 and 3. The data: item
# qualities, each user's taste drifting slowly (an AR(1) walk) and noise,
# so that both choices fall inside their grids (prior 16, half-life 32)
awk 'BEGIN { srand(5); print "userId,movieId,rating,timestamp"
    for (i = 1; i <= 60; i++) q[i] = rand() * 2 - 1
    for (u = 1; u <= 60; u++) { n = 20 + int(rand() * 40); d = 0
        for (k = 0; k < n; k++) { d = 0.99 * d + 0.1 * (rand() - 0.5); i = 1 + int(rand() * rand() * 60)
            r = 3 + q[i] + 2 * d + 4 * (rand() - 0.5); r = int(r * 2 + 0.5) / 2
            r = r < 0.5 ? 0.5 : r; r = r > 5 ? 5 : r
            printf "%d,%d,%.1f,%d\n", u, i, r, 964980000 + 1000 * u + 7 * k } } }' \
    > "$T/drift.csv"
"$FS" data import --format movielens "$T/drift.csv" -o "$T/drift.h5" >/dev/null || fail "import drift"
AU="data.path=$T/drift.h5 train.max_steps=2 train.final_eval=off train.lr=1e-12 embedding.lr=1e-12
model.recency=auto model.bias_prior=auto"
# shellcheck disable=SC2086
run a1 1 $AU
# shellcheck disable=SC2086
run a2 3 $AU "output.checkpoint_dir=$T/cka"
same_losses "$T/a1.jsonl" "$T/a2.jsonl" "model.recency = auto: P=3 vs P=1" 0 1e-6
# the searches' fits shared among the ranks (9 and 8 candidates a round on
# 3 ranks): every value's loss and the choices as at P = 1, to the digit
grep '= auto: the start-up fit' "$T/a1.out" > "$T/a1.search"
grep '= auto: the start-up fit' "$T/a2.out" > "$T/a2.search"
[ "$(wc -l < "$T/a1.search")" = 2 ] && cmp -s "$T/a1.search" "$T/a2.search" &&
    pass "model.bias_prior, model.recency = auto: the searches' losses and choices at P = 3 = P = 1" ||
    fail "the searches at P = 3 and 1: $(diff "$T/a1.search" "$T/a2.search")"
"$PY" "$TOP_SRCDIR/tests/bias_auto_oracle.py" "$T/drift.h5" "$T/cka/ckpt-2.h5" "$T/a2.out" \
    > "$T/auto.out" 2>&1 && pass "$(tail -1 "$T/auto.out")" || fail "auto: $(cat "$T/auto.out")"
grep -q '"bias_prior":' "$T/a2.jsonl" && grep -q '"recency":' "$T/a2.jsonl" ||
    fail "the summary line has no bias_prior or recency"
expect_ok "$FS" export "$T/cka/ckpt-2.h5" -o "$T/modela.h5"
"$PY" - "$T/modela.h5" "$T/a2.out" <<'EOF' && pass "export: the chosen half-life" || fail "export with model.recency = auto"
import re, sys, h5py
H = float(re.search(r"model.recency = auto: .*; chosen (\S+)", open(sys.argv[2]).read()).group(1))
got = h5py.File(sys.argv[1], "r")["head"].attrs["recency"]
assert got == H and H != 16, (got, H)  # 16: the placeholder before the choice
EOF
expect_error "model.bias_prior = auto: data.split = time:964990001,964990002 leaves no validation" \
    "$FS" train "$IN" $R model.bias_prior=auto data.split=time:964990001,964990002 train.max_steps=1
# the choice given by hand (the item rows' and the user rows' prior as
# "I,U", the half-life): the auto run's losses, no search; the summary
# carries both priors
IU=$(sed -n 's/.*model.bias_prior = auto: .*; chosen \([0-9.]*,[0-9.]*\)$/\1/p' "$T/a2.out")
H=$(sed -n 's/.*model.recency = auto: .*; chosen \([0-9.]*\)$/\1/p' "$T/a2.out")
[ "${IU%,*}" != "${IU#*,}" ] || fail "model.bias_prior = auto chose '$IU': not two different priors"
# shellcheck disable=SC2086
run a3 1 $AU "model.bias_prior=$IU" "model.recency=$H"
same_losses "$T/a2.jsonl" "$T/a3.jsonl" "model.bias_prior = $IU, model.recency = $H by hand = auto" 0 1e-6
grep -q "model.bias_prior = auto:\|model.recency = auto:" "$T/a3.out" && fail "model.bias_prior = $IU: a search ran"
grep -q "\"bias_prior\":${IU%,*},\"bias_prior_user\":${IU#*,}," "$T/a2.jsonl" ||
    fail "the summary line has not bias_prior ${IU%,*}, bias_prior_user ${IU#*,}"
for v in x 4,x 4, ,4 1,2,3 -1,2 2,1e10 nan; do
    sed "s/^\[model\]/[model]\nbias_prior = $v/" "$IN" > "$T/bp.in"
    expect_error "bp.in:9: model.bias_prior = '$v': a number in [0, 1e9] (the item and the user rows'), two (\"I,U\"" \
        "$FS" train "$T/bp.in" $R train.max_steps=1
done
expect_error "model.bias_prior = 2 needs model.bias = on" \
    "$FS" train "$IN" $R model.bias=off model.bias_prior=2 train.max_steps=1
expect_ok "$FS" export "$T/ckh/ckpt-1.h5" -o "$T/model.h5"
"$PY" - "$T/model.h5" "$T/r.h5" <<'EOF' && pass "export: /head/centre and the recency attribute" || fail "export with model.recency"
import sys, h5py, numpy as np
g, ds = h5py.File(sys.argv[1], "r")["head"], h5py.File(sys.argv[2], "r")
n = int(ds["item_ids"][:].max()) + 1
assert g.attrs["recency"] == 4 and g["centre"].shape == (n, 2), (dict(g.attrs), g["centre"].shape)
c = g["centre"][:]
assert np.all((c[:, 0] > 0) & (c[:, 0] < 1)), c[:, 0]  # like: each item's smoothed rate
EOF
expect_error "model.recency = 4 needs model.bias = on" \
    "$FS" train "$IN" $R model.bias=off model.recency=4 train.max_steps=1
expect_error "model.recency = '-1': a number in [0, 1e9] or auto" \
    "$FS" train "$IN" $R model.recency=-1 train.max_steps=1
expect_error "model.recency = 'abc': a number in [0, 1e9] or auto" \
    "$FS" train "$IN" $R model.recency=abc train.max_steps=1
expect_error "model.recency: for train.task = ranking" \
    "$FS" train "$IN" "data.path=$T/r.h5" model.recency=4 train.max_steps=1

# model.factors (the factor terms, model/task_factor.h; beside model.recency):
# P-invariant training and test metrics, the fake device (the rows
# downloaded, the terms and the rows' gradients uploaded), a resume at
# another rank count, export's parameters
F="model.factors=3 model.recency=4 train.epochs=2"
# shellcheck disable=SC2086
run f1 1 $F "output.checkpoint_dir=$T/ckf" train.checkpoint_every=6
# shellcheck disable=SC2086
run f2 2 $F
# shellcheck disable=SC2086
run f3 3 $F
# shellcheck disable=SC2086
run ff 1 $F device.type=fake
# shellcheck disable=SC2086
run fr 2 $F "train.resume=$T/ckf/ckpt-6.h5"
same_losses "$T/f1.jsonl" "$T/f2.jsonl" "model.factors: P=2 vs P=1" 0 1e-6
same_losses "$T/f1.jsonl" "$T/f3.jsonl" "model.factors: P=3 vs P=1" 0 1e-6
same_losses "$T/f1.jsonl" "$T/ff.jsonl" "model.factors: the fake device vs the CPU" 0 1e-6
same_losses "$T/f1.jsonl" "$T/fr.jsonl" "model.factors: resumed P=1 -> P=2 at step 6" 6 1e-6
for p in 2 3 f r; do
    same_test "$T/f1.jsonl" "$T/f$p.jsonl" "model.factors: f$p vs f1"
done
# moved A B: run A's first loss is run B's (M starts at 0), its fourth not
moved() {
    "$PY" - "$T/$1.jsonl" "$T/$2.jsonl" <<'EOF'
import json, sys
loss = lambda f: [l["loss"] for l in map(json.loads, open(f)) if l.get("event") == "train"]
a, b = loss(sys.argv[1]), loss(sys.argv[2])
sys.exit(0 if a[0] == b[0] and abs(a[3] - b[3]) > 1e-6 else 1)
EOF
}
moved f1 h1 && pass "model.factors: the losses move off model.recency's alone" || fail "model.factors changes nothing"
expect_ok "$FS" export "$(ls "$T"/ckf/ckpt-*.h5 | tail -1)" -o "$T/modelf.h5"
"$PY" - "$T/modelf.h5" "$T/r.h5" <<'EOF' && pass "export: the factors attribute, bias.factor and bias.fmix" || fail "export with model.factors"
import sys, h5py
f, ds = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
n = int(ds["item_ids"][:].max()) + 1
assert f["head"].attrs["factors"] == 3 and f["head"].attrs["factor_ridge"] == 0, dict(f["head"].attrs)
assert f["dense/bias.factor"].size == n * 3 and f["dense/bias.fmix"].size == 4
EOF
# model.factor_ridge: P-invariant, the fake device the CPU's, not the mean's losses
# shellcheck disable=SC2086
run g1 1 $F model.factor_ridge=0.5
# shellcheck disable=SC2086
run g2 2 $F model.factor_ridge=0.5
# shellcheck disable=SC2086
run gf 1 $F model.factor_ridge=0.5 device.type=fake
same_losses "$T/g1.jsonl" "$T/g2.jsonl" "model.factor_ridge: P=2 vs P=1" 0 1e-6
same_losses "$T/g1.jsonl" "$T/gf.jsonl" "model.factor_ridge: the fake device vs the CPU" 0 1e-6
for p in 2 f; do
    same_test "$T/g1.jsonl" "$T/g$p.jsonl" "model.factor_ridge: g$p vs g1"
done
moved g1 f1 && pass "model.factor_ridge: the losses move off the shrunk mean's" || fail "model.factor_ridge changes nothing"
expect_error "model.factor_ridge = 0.5 needs model.factors in 1 .. 16" \
    "$FS" train "$IN" $R model.factor_ridge=0.5 train.max_steps=1
expect_error "model.factor_ridge = 0.5 needs model.factors in 1 .. 16 (an F x F solve a token; model.factors = 17)" \
    "$FS" train "$IN" $R model.factors=17 model.factor_ridge=0.5 train.max_steps=1

# model.factor_feature (the factor rows keyed by an item feature's values,
# an item's factors its value's row): P = 2 and the fake device against
# P = 1, a resume at another rank count, not the items' own rows' losses;
# export's attribute and rows; refused for a feature that is not
# one categorical value per item, or without model.factors
awk 'BEGIN { print "movieId,grp,tags,w"
    for (i = 1; i <= 60; i++) printf "%d,g%d,t%d|t%d,%.2f\n", i, i % 7, i % 3, i % 4, i / 10 }' > "$T/items.csv"
"$FS" data import --format movielens "$T/ratings.csv" --item-features "$T/items.csv" \
    --item-key movieId --item-cols grp,tags:multi,w:float -o "$T/rf.h5" >/dev/null || fail "import with item features"
E="data.path=$T/rf.h5 model.factor_feature=grp"
# shellcheck disable=SC2086
run e1 1 $F $E "output.checkpoint_dir=$T/cke" train.checkpoint_every=6
# shellcheck disable=SC2086
run e2 2 $F $E
# shellcheck disable=SC2086
run ef 1 $F $E device.type=fake
# shellcheck disable=SC2086
run er 2 $F $E "train.resume=$T/cke/ckpt-6.h5"
# shellcheck disable=SC2086
run en 1 $F "data.path=$T/rf.h5"
same_losses "$T/e1.jsonl" "$T/e2.jsonl" "model.factor_feature: P=2 vs P=1" 0 1e-6
same_losses "$T/e1.jsonl" "$T/ef.jsonl" "model.factor_feature: the fake device vs the CPU" 0 1e-6
same_losses "$T/e1.jsonl" "$T/er.jsonl" "model.factor_feature: resumed P=1 -> P=2 at step 6" 6 1e-6
for p in 2 f r; do
    same_test "$T/e1.jsonl" "$T/e$p.jsonl" "model.factor_feature: e$p vs e1"
done
moved e1 en && pass "model.factor_feature: the losses move off the items' own rows'" ||
    fail "model.factor_feature changes nothing"
expect_ok "$FS" export "$(ls "$T"/cke/ckpt-*.h5 | tail -1)" -o "$T/modele.h5"
"$PY" - "$T/modele.h5" <<'EOF' && pass "export: factor_feature, bias.factor [7 + 1 values, 3]" || fail "export with model.factor_feature"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f["head"].attrs["factor_feature"] in ("grp", b"grp"), dict(f["head"].attrs)
assert f["dense/bias.factor"].size == 8 * 3, f["dense/bias.factor"].shape
EOF
for bad in "nope:$T/rf.h5 has no item feature /items/nope (its single-valued categorical item features: grp)" \
    "rating:$T/rf.h5 has no item feature /items/rating; /events/rating is an events feature" "tags:/items/tags of $T/rf.h5 is multi-valued" \
    "w:/items/w of $T/rf.h5 is a float feature"; do
    # shellcheck disable=SC2086
    expect_error "model.factor_feature = ${bad%%:*}: ${bad#*:}" \
        "$FS" train "$IN" $R $F $E "model.factor_feature=${bad%%:*}" train.max_steps=1
done
# shellcheck disable=SC2086
expect_error "model.factor_feature = grp (command line) needs model.factors > 0" \
    "$FS" train "$IN" $R $E train.max_steps=1

# model.factors_lr (the factor terms' own rate): given as train.lr it is
# the run without it (bit for bit); at 50 x train.lr the same at P = 2 as
# at P = 1, and Adam's first step moves the matrix M (started at 0, its
# gradient not) by 50 times what it moves the head's last bias (started at
# 0 with model.bias), to 1e-3: the factor rows take the rate and the head
# does not
# shellcheck disable=SC2086
run fl1 1 $F model.factors_lr=1e-3
same_losses "$T/f1.jsonl" "$T/fl1.jsonl" "model.factors_lr = train.lr: the run without it" 0 0
# shellcheck disable=SC2086
run fh1 1 $F model.factors_lr=5e-2 "output.checkpoint_dir=$T/ckfh" train.checkpoint_every=1
# shellcheck disable=SC2086
run fh2 2 $F model.factors_lr=5e-2
same_losses "$T/fh1.jsonl" "$T/fh2.jsonl" "model.factors_lr: P=2 vs P=1" 0 1e-6
same_test "$T/fh1.jsonl" "$T/fh2.jsonl" "model.factors_lr: P=2 vs P=1"
"$PY" - "$T/ckfh/ckpt-1.h5" <<'EOF' > "$T/flr.out" 2>&1 && pass "model.factors_lr: $(tail -1 "$T/flr.out")" || fail "model.factors_lr's first step: $(cat "$T/flr.out")"
import sys, h5py, numpy as np
d = h5py.File(sys.argv[1], "r")["dense"]
last = max((k for k in d if k.startswith("head.b")), key=lambda k: int(k[6:]))
m, b = np.abs(d["bias.fmix"][:]).max(), np.abs(d[last][:]).max()
assert abs(b / 1e-3 - 1) < 1e-3 and abs(m / b / 50 - 1) < 1e-3, (m, b)
print("the first step moves M by %.4g, %s by %.4g" % (m, last, b))
EOF
# model.factors_lr = auto: the same choice at P = 1 and 2, and the run with
# the chosen rate given by hand is the auto run (bit for bit); with
# model.recency and model.bias_prior = auto, whose start-up search the
# first candidate makes for the others and the run: the run that searches
# alone (the rate given) says the same search and trains alike
FA="$F model.recency=auto model.bias_prior=auto"
# shellcheck disable=SC2086
run fa1 1 $FA model.factors_lr=auto "output.checkpoint_dir=$T/ckfa" train.checkpoint_every=4
# shellcheck disable=SC2086
run fa2 2 $FA model.factors_lr=auto
chosen() { sed -n 's/.*model.factors_lr = auto: chosen \([^ ]*\) .*/\1/p' "$T/$1.out"; }
flr=$(chosen fa1)
[ -n "$flr" ] && [ "$flr" = "$(chosen fa2)" ] && [ "$(grep -c "model.factors_lr = auto: candidate" "$T/fa1.out")" = 5 ] &&
    pass "model.factors_lr = auto: 5 candidates, $flr chosen at P = 1 and 2" ||
    fail "model.factors_lr = auto: chosen '$flr' at P = 1, '$(chosen fa2)' at P = 2"
# shellcheck disable=SC2086
run fah 1 $FA "model.factors_lr=$flr"
same_losses "$T/fa1.jsonl" "$T/fa2.jsonl" "model.factors_lr = auto: P=2 vs P=1" 0 1e-6
same_losses "$T/fa1.jsonl" "$T/fah.jsonl" "model.factors_lr = auto: the run with its choice given" 0 0
same_test "$T/fa1.jsonl" "$T/fah.jsonl" "model.factors_lr = auto: the run with its choice given"
grep "^model.bias_prior = auto:\|^model.recency = auto:" "$T/fa1.out" > "$T/fa1.search"
grep "^model.bias_prior = auto:\|^model.recency = auto:" "$T/fah.out" > "$T/fah.search"
[ "$(wc -l < "$T/fa1.search")" = 2 ] && cmp -s "$T/fa1.search" "$T/fah.search" &&
    pass "model.factors_lr = auto: the candidates' start-up search said once, as the run alone says it" ||
    fail "model.factors_lr = auto: the search's lines: $(diff "$T/fa1.search" "$T/fah.search" | head -4)"
# resumed (from its step 4): the stored choice reused, no candidate run again
# shellcheck disable=SC2086
run far 1 $FA model.factors_lr=auto "train.resume=$T/ckfa/ckpt-4.h5"
resumed_no_search "$T/far.out" "model.factors_lr = auto" "model.factors_lr = auto: candidate" \
    "model.factors_lr = auto: resumed from $T/ckfa/ckpt-4.h5: the choice it trained with, not searched again: $flr"
same_losses "$T/fa1.jsonl" "$T/far.jsonl" "model.factors_lr = auto: resumed after step 4 vs uninterrupted" 4 1e-6
expect_error "model.factors_lr = 1e-2 needs model.factors > 0" \
    "$FS" train "$IN" $R model.factors_lr=1e-2 train.max_steps=1
expect_error "model.factors_lr = auto needs model.factors > 0" \
    "$FS" train "$IN" $R model.factors_lr=auto train.max_steps=1
expect_error "model.factors_lr = '-1': a number in [0, 1e9] or auto" \
    "$FS" train "$IN" $R model.factors=3 model.factors_lr=-1 train.max_steps=1
expect_error "model.factors_lr = 'fast': a number in [0, 1e9] or auto" \
    "$FS" train "$IN" $R model.factors=3 model.factors_lr=fast train.max_steps=1
expect_error "model.factors = 3 needs model.bias = on" \
    "$FS" train "$IN" $R model.bias=off model.factors=3 train.max_steps=1
expect_error "model.factors = '65': out of range [0, 64]" \
    "$FS" train "$IN" $R model.factors=65 train.max_steps=1
expect_error "model.factors: for train.task = ranking" \
    "$FS" train "$IN" "data.path=$T/r.h5" model.factors=3 train.max_steps=1
finish
