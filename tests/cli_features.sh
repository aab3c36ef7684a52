#!/bin/sh
# cli_features: training with features (features.item, .event, .user) keeps
# the invariants of the item-only model: the same losses on 1, 2, 3 and 4
# ranks and with an embedding group (1e-6), with every overlap mode, with
# the feature tables forced replicated or forced sharded, and after a
# resume on another rank count (a P = 2 checkpoint resumed at P = 3 equals
# the uninterrupted run); recommend gives the same lists on any rank
# count, export's item embeddings are the rows plus the pooled item
# features; the tables in (fake) device memory give the CPU's losses; bad
# parameters are refused before training, naming the parameter and the
# dataset.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in

# a MovieLens-like import with genres (the ml-latest layout) ...
awk 'BEGIN { srand(11); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 60; u++) { n = 6 + int(rand() * 30)
        for (k = 0; k < n; k++) printf "%d,%d,%.1f,%d\n", u, 1 + int(rand() * rand() * 150), 0.5 + int(rand() * 10) / 2, 964980000 + 1000 * u + 37 * k } }' \
    > "$T/ratings.csv"
awk 'BEGIN { split("Action,Comedy,Drama,Thriller,Romance,Sci-Fi,Children", g, ","); print "movieId,title,genres"
    for (m = 1; m <= 150; m++) { s = g[1 + m % 7]; if (m % 3) s = s "|" g[1 + (m * 5) % 7]; if (m % 11 == 0) s = "(no genres listed)"
        printf "%d,Movie %d (%d),%s\n", m, m, 1980 + m % 30, s } }' > "$T/movies.csv"
"$FS" data import --format csv "$T/ratings.csv" --items "$T/movies.csv" -o "$T/ml.h5" >/dev/null ||
    { fail "import"; finish; }
# ... and synthetic data with features of every kind
"$FS" data gen --users 60 --items 150 --length uniform:4,30 --timestamps --item-feature genres:12:3 \
    --item-feature brand:30 --user-feature age:7 --user-feature occ:15:2 --event-feature act:5 \
    -o "$T/all.h5" >/dev/null || { fail "data gen"; finish; }

# train NAME P [overrides]: a short run, its losses in $T/NAME.jsonl
train() {
    name=$1 np=$2; shift 2
    if "$MPIRUN" -np "$np" "$FS" train "$IN" train.max_steps=8 train.log_every=1 \
        train.final_eval=off "output.metrics=$T/$name.jsonl" "$@" >"$T/$name.out" 2>&1; then
        :
    else
        fail "train $name: $(tail -5 "$T/$name.out")"
    fi
}

G="data.path=$T/ml.h5 features.item=genres,year"
train g1 1 $G
train g2 2 $G
train g4 4 $G
same_losses "$T/g1.jsonl" "$T/g2.jsonl" "genres: P=2 vs P=1" 0 1e-6
same_losses "$T/g1.jsonl" "$T/g4.jsonl" "genres: P=4 vs P=1" 0 1e-6
grep -q "item feature genres: multi-valued, 7 rows x 16, replicated" "$T/g2.out" ||
    fail "feature line: $(grep feature "$T/g2.out")"
train grep 2 $G features.placement=replicated
train gsh 2 $G features.placement=sharded
same_losses "$T/grep.jsonl" "$T/gsh.jsonl" "genres: replicated vs sharded (P=2)" 0 1e-6
grep -q "item feature genres: multi-valued, 7 rows x 16, sharded" "$T/gsh.out" ||
    fail "sharded line: $(grep feature "$T/gsh.out")"
train gemb 4 $G features.placement=sharded parallel.embedding_group=2
same_losses "$T/g1.jsonl" "$T/gemb.jsonl" "genres: sharded, embedding group 2 of 4" 0 1e-6
# the features change the model (the losses are not those of the id-only run)
train plain 2 "data.path=$T/ml.h5"
if paste "$T/plain.jsonl" "$T/g2.jsonl" | grep -q '"step":8,"loss":[0-9.]*,.*"step":8,"loss":'; then
    l0=$(losses "$T/plain.jsonl" | awk '$1 == 8 { print $2 }')
    l1=$(losses "$T/g2.jsonl" | awk '$1 == 8 { print $2 }')
    [ "$l0" != "$l1" ] || fail "features changed nothing ($l0)"
fi

# every kind of feature, widths projected, every overlap mode, 1 to 3 ranks
A="data.path=$T/all.h5 features.item=genres,brand features.event=act features.user=age,occ"
A="$A features.dims=brand:8,occ:5 features.pooling=mean"
train a1 1 $A
train a3 3 $A features.placement=sharded
train a2n 2 $A parallel.overlap=none
train a2p 2 $A parallel.overlap=pipeline features.optimizer=adam features.lr=0.005
train a1p 1 $A features.optimizer=adam features.lr=0.005
same_losses "$T/a1.jsonl" "$T/a3.jsonl" "all features: P=3 sharded vs P=1" 0 1e-6
same_losses "$T/a1.jsonl" "$T/a2n.jsonl" "all features: P=2 overlap=none vs P=1" 0 1e-6
same_losses "$T/a1p.jsonl" "$T/a2p.jsonl" "all features (adam): P=2 pipeline vs P=1" 0 1e-6
grep -q "user feature occ (contextual token): multi-valued, 14 rows x 5, sharded, projected to model.dim" \
    "$T/a3.out" || fail "occ line: $(grep feature "$T/a3.out")"
# the user id as a contextual token (features.user = id: a table of one row per user)
train u1 1 data.path=$T/all.h5 features.user=id,age features.dims=id:8
# (a list's blanks around the commas are not part of the names)
train u3 3 data.path=$T/all.h5 "features.user=id, age" features.dims=id:8 features.placement=sharded
same_losses "$T/u1.jsonl" "$T/u3.jsonl" "user id: P=3 sharded vs P=1" 0 1e-6
grep -q "user feature id (contextual token): 60 rows x 8, sharded, projected to model.dim" \
    "$T/u3.out" || fail "id line: $(grep feature "$T/u3.out")"

# item and event features on sequences cut into chunks on several ranks (split_long)
E="data.path=$T/all.h5 features.item=genres,brand features.event=act features.dims=brand:8"
train e1 1 $E
train esl 2 $E parallel.split_long=auto debug.split_chunks=2
same_losses "$T/e1.jsonl" "$T/esl.jsonl" "item and event features: split_long P=2 vs P=1" 0 1e-6

# resume: a P = 2 checkpoint at step 4 resumed at P = 3 equals the uninterrupted run
mkdir -p "$T/ck"
train full 2 $A "output.checkpoint_dir=$T/ck" train.checkpoint_every=4
train res 3 $A "train.resume=$T/ck/ckpt-4.h5"
same_losses "$T/full.jsonl" "$T/res.jsonl" "all features: resumed at P=3 from P=2" 4 1e-6
expect_error "holds table /emb/feat.act, which this run does not train" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/all.h5" features.item=genres,brand \
    features.user=age,occ features.dims=brand:8,occ:5 "train.resume=$T/ck/ckpt-4.h5"
mkdir -p "$T/ck0"
train noact 2 $A features.event= "output.checkpoint_dir=$T/ck0" train.max_steps=2
expect_error "no table /emb/feat.act: it was written by a run without this table" \
    "$MPIRUN" -np 2 "$FS" train "$IN" $A "train.resume=$T/ck0/ckpt-2.h5"

# evaluation, recommend and export score items with their features
train ev2 2 $A train.final_eval=on train.max_steps=4
grep -q '"event":"eval","split":"test"' "$T/ev2.jsonl" || fail "no test evaluation"
expect_ok "$MPIRUN" -np 2 "$FS" recommend "$T/ck/ckpt-8.h5" --top 5 -o "$T/r2.csv"
expect_ok "$MPIRUN" -np 3 "$FS" recommend "$T/ck/ckpt-8.h5" --top 5 -o "$T/r3.csv"
cmp -s "$T/r2.csv" "$T/r3.csv" || fail "recommend differs between 2 and 3 ranks"
expect_ok "$MPIRUN" -np 2 "$FS" export "$T/ck/ckpt-8.h5" -o "$T/model.h5"
if have_h5py; then
    "$PY" - "$T/model.h5" "$T/ck/ckpt-8.h5" "$T/all.h5" "$T/r2.csv" <<'EOF' || fail "export/recommend with features"
import sys, csv, h5py, numpy as np
m, c, d = (h5py.File(p, "r") for p in sys.argv[1:4])
E, U = m["item_embeddings"][:], m["user_embeddings"][:]
R = c["emb/items/weight"][1:].astype(np.float64)
G, Br = c["emb/feat.genres/weight"][:], c["emb/feat.brand/weight"][:] @ c["emb/proj.brand/weight"][1:]
off, val, brand = d["items/genres/offsets"][:], d["items/genres/values"][:], d["items/brand"][:]
for i in range(len(R)):
    v = [x for x in val[off[i]:off[i + 1]] if x]
    R[i] += (G[v].mean(0) if v else 0) + (Br[brand[i]] if brand[i] else 0)
assert np.abs(R - E).max() < 1e-5, np.abs(R - E).max()
S = U @ (E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-6)).T
rows = list(csv.reader(open(sys.argv[4])))[1:]
err = max(abs(S[int(u), int(i) - 1] - float(s)) for u, r, i, s in rows)
assert err < 1e-4, err
print("export = rows + features; recommend scores them")
EOF
fi

# refused before training: parameter, file and feature named
expect_error "features.item = genres,colour: $T/ml.h5 has no /items/colour (its items features: genres, year)" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/ml.h5" features.item=genres,colour
expect_error "features.user = age: $T/ml.h5 has no /users/age (its users features: none)" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/ml.h5" features.user=age
expect_error "features.item = genres,genres: 'genres' is listed twice" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/ml.h5" features.item=genres,genres
expect_error "features.dims = 'year:0': 'year:0' is not NAME:WIDTH" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/ml.h5" features.item=year features.dims=year:0
expect_error "features.dims = genre:8: 'genre:8' names no feature" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/ml.h5" features.item=genres features.dims=genre:8
expect_error "features.user = age: contextual tokens with parallel.split_long = auto are not supported" \
    "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/all.h5" features.user=age parallel.split_long=auto
expect_error "features.placement = 'somewhere': expected one of auto|replicated|sharded" \
    "$FS" params "$IN" features.placement=somewhere
# the tables in device memory (the fake device's; tests/device_feat_body.sh
# has every kind at P = 1, 2, 4): the CPU's losses, tolerance 0
train gdev 2 $G device.type=fake device.share=on embedding.placement=device parallel.transport=mpi
same_losses "$T/g2.jsonl" "$T/gdev.jsonl" "genres: tables in fake device memory vs the CPU, P=2" 0 0
finish
