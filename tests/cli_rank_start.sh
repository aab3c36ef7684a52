#!/bin/sh
# cli_rank_start: what a new user of ranking trips over (doc/ranking.md),
# each a case that once failed or said too little:
#   - data import --format movielens keeps the rating as /events/rating
#     (float) for ML-1M's ratings.dat and ratings.csv alike, and ranking
#     trains on it; --event-cols by position with --no-header;
#   - a ranking task on a dataset with /actions but no event column says
#     how to import the rating; retrieval parameters in a ranking run are
#     warned about; data.split = time:T leaving no training events says
#     so; --users given a csv names --user-features; help params says
#     what keep_best follows in ranking;
#   - the progress line and the metrics carry each task's loss;
#   - a checkpoint's relative data.path is found from another folder (or
#     the message says where it came from); score reads the dataset's own
#     column names (userId,movieId; other columns ignored) and gives the
#     same scores as user,item.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in

# ML-1M layout: user::item::rating::timestamp, 30 users x 12 events
awk 'BEGIN { srand(7); for (u = 1; u <= 30; u++) for (k = 0; k < 12; k++)
    printf "%d::%d::%d::%d\n", u, 1 + int(rand() * 40), 1 + int(rand() * 5), 978300000 + 100 * u + k }' \
    > "$T/ratings.dat"
expect_ok "$FS" data import --format movielens "$T/ratings.dat" -o "$T/ml.h5"
grep -q "features: events/rating" "$T/out" || fail "ratings.dat: no events/rating: $(cat "$T/out")"
# the same events as ratings.csv (a header) through --format movielens
{ echo "userId,movieId,rating,timestamp"; sed 's/::/,/g' "$T/ratings.dat"; } > "$T/ratings.csv"
expect_ok "$FS" data import --format movielens "$T/ratings.csv" -o "$T/mlc.h5"
grep -q "features: events/rating" "$T/out" || fail "ratings.csv: no events/rating: $(cat "$T/out")"
if have_h5py; then
    "$PY" - "$T/ml.h5" "$T/mlc.h5" "$T/ratings.dat" <<'EOF' && pass "movielens: /events/rating = the rating, .dat = .csv" || fail "events/rating values"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
r = a["events/rating"][:]
assert r.dtype == np.float32 and np.array_equal(r, b["events/rating"][:])
assert np.array_equal(np.rint(r * 10).astype(np.int32), a["actions"][:])
assert sorted(r.tolist()) == sorted(float(l.split("::")[2]) for l in open(sys.argv[3]))
EOF
fi
# no header: --event-cols names a column of --columns
sed 's/::/,/g' "$T/ratings.dat" > "$T/nh.csv"
expect_ok "$FS" data import --format csv --no-header "$T/nh.csv" --event-cols rating:float -o "$T/nh.h5"
grep -q "features: events/rating" "$T/out" || fail "--no-header --event-cols: $(cat "$T/out")"
expect_error "--event-cols: 'stars' is not a column of --columns user,item,rating,time" \
    "$FS" data import --format csv --no-header "$T/nh.csv" --event-cols stars -o "$T/x.h5"

# --- training on it; each task's loss on the progress line -----------------------
TASKS="train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5"
R="$TASKS data.split=last:2 train.batch_size=8 train.log_every=2"
expect_ok "$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/ml.h5" $R train.max_steps=4 \
    train.final_eval=off "output.metrics=$T/m.jsonl"
grep -q "step 4/4 loss [0-9.]* (like [0-9.]*, rating [0-9.]*)" "$T/err" "$T/out" ||
    fail "no per-task losses on the progress line: $(grep 'step 4/4' "$T/err" "$T/out")"
grep -q '"step":4,.*"loss.like":[0-9.]*,"loss.rating":[0-9.]*' "$T/m.jsonl" &&
    pass "each task's loss on the progress line and in the metrics" ||
    fail "metrics: $(grep '"step":4' "$T/m.jsonl")"

# --- what is refused or warned about, and how ------------------------------------
"$FS" data import --format csv "$T/ratings.csv" -o "$T/noev.h5" >/dev/null || fail "import noev"
one() { "$FS" train "$IN" train.max_steps=1 train.final_eval=off "$@"; }
expect_error "its /actions (round(rating x 10), the retrieval's action tokens) are no task's column: import again with --event-cols rating:float" \
    one "data.path=$T/noev.h5" $TASKS data.split=last:2
expect_ok one "data.path=$T/ml.h5" $TASKS data.split=last:2 train.loss=bce train.temperature=0.5
for k in "train.loss = bce (command line)" "train.temperature = 0.5 (command line)"; do
    grep -qF "warning: $k is a retrieval parameter" "$T/err" && pass "warned: $k" ||
        fail "no warning about $k: $(cat "$T/err")"
done
expect_error "data.split = time:978300000: no training events are left in $T/ml.h5" \
    one "data.path=$T/ml.h5" $TASKS data.split=time:978300000
printf 'userId,age\n1,25\n' > "$T/users.csv"
expect_error "for a csv of user features use --user-features $T/users.csv --user-key COL" \
    "$FS" data import --format movielens "$T/ratings.dat" --users "$T/users.csv" -o "$T/x.h5"
"$FS" help params > "$T/help" 2>&1
grep -q "ranking: train.select, by default the first binary task's AUC" "$T/help" &&
    pass "help params: what keep_best follows in ranking" || fail "help params: keep_best"

# --- a checkpoint from another folder; score with the dataset's column names --------
mkdir -p "$T/run" "$T/else"
cp "$T/ml.h5" "$T/run/ml.h5"
(cd "$T/run" && "$FS" train "$IN" data.path=ml.h5 $R train.max_steps=2 train.final_eval=off \
    output.checkpoint_dir=ck >/dev/null 2>&1) || fail "train in run/"
printf 'user,item\n3,%s\n5,%s\n' "$(sed -n 2p "$T/ratings.dat" | cut -d: -f3)" \
    "$(sed -n 3p "$T/ratings.dat" | cut -d: -f3)" > "$T/pairs.csv"
{ echo "userId,movieId,rating"; sed -n '2,3p' "$T/pairs.csv" | sed 's/$/,4/'; } > "$T/pairs-ml.csv"
(cd "$T/else" && "$FS" score ../run/ck/ckpt-2.h5 --pairs ../pairs.csv -o a.csv >../sa.out 2>&1) &&
    pass "score from another folder: the stored data.path found" ||
    fail "score from another folder: $(tail -3 "$T/sa.out")"
grep -q "data.path = ml.h5 (stored in ../run/ck/ckpt-2.h5) is ../run/ml.h5 from here" "$T/sa.out" ||
    fail "no line saying where data.path was found: $(grep data.path "$T/sa.out")"
(cd "$T/else" && "$FS" score ../run/ck/ckpt-2.h5 --pairs ../pairs-ml.csv -o b.csv >/dev/null 2>&1) ||
    fail "score with userId,movieId"
tail -n +2 "$T/else/a.csv" > "$T/a.body"
tail -n +2 "$T/else/b.csv" > "$T/b.body"
[ -s "$T/a.body" ] && cmp -s "$T/a.body" "$T/b.body" &&
    pass "score: userId,movieId,rating pairs = user,item pairs" ||
    fail "score: the dataset's column names give other scores"
mv "$T/run/ml.h5" "$T/run/moved.h5"
in_else() { (cd "$T/else" && exec "$@"); }
expect_error "data.path = ml.h5 came from the parameters stored in ../run/ck/ckpt-2.h5 (relative to the folder training ran in) and is not readable from here (nor as ../run/ml.h5): give data.path=PATH on the command line" \
    in_else "$FS" score ../run/ck/ckpt-2.h5 --pairs ../pairs.csv -o c.csv
finish
