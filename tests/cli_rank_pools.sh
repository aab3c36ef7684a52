#!/bin/sh
# cli_rank_pools: ranking histories from pools of event kinds (data.pools,
# data/pools.h; MLPerf DLRMv4's listen+/like/skip history).
#   - the batches the trainer builds (tests/pools_dump: training sequences,
#     validation and test histories with their candidates, a part of a
#     user's candidates; each token's item, event, labels and event
#     feature) equal an independent selection in Python from the file
#     (tests/pools_oracle.py), with overlapping pools of a categorical and
#     a float column (with crosses, below), and without pools (the most
#     recent events); on long users too (a sparse pool read back over several blocks, events far
#     apart);
#   - a ranking run with pools and an event feature: other losses than
#     without pools (and with crosses too: the same on P = 1 and 2, below);
#     the stream schedule with pools: the same losses on P = 1 and 2;
#   - hashed crosses (features.cross, feature/feat_cross.h): each token's
#     value of crosses of 2 to 4 keys (user, item, hour, an item column, an
#     event column) in the same batches equals the oracle's, whose XXH64 is
#     checked on the published vectors; with a /user_map too (the raw user
#     ids hashed); a run with crosses and pools: the same losses and
#     metrics on P = 1 and 2, other losses than without the crosses; pools
#     alone with the sequences cut into chunks (parallel.split_long) at
#     P = 2 as unsplit at P = 1, and crosses with it refused;
#   - bad values are refused before training.
. "$(dirname "$0")/lib.sh"
need_mpirun
have_h5py || { echo "SKIP: $PY cannot import h5py and numpy"; exit 77; }
IN=$TOP_SRCDIR/input/tiny.in
DUMP=$(dirname "$FS")/tests/pools_dump
TASKS=click:binary:click,rating:regression:rating
POOLS="one:kind==1, low:kind<=2, hi:click"

"$FS" data gen --users 40 --items 60 --length uniform:5,70 --timestamps --labels planted:3 \
    --event-feature kind:5 --item-feature artist:12 -o "$T/g.h5" >/dev/null || { fail "data gen"; finish; }
"$FS" data gen --users 5 --items 200 --length uniform:1500,2600 --labels planted:3 \
    --event-feature kind:5 --seed 3 -o "$T/long.h5" >/dev/null || { fail "data gen long"; finish; }

# same_dump NAME FILE N K POOLS [CROSS]: the batches of pools_dump = the oracle's
same_dump() {
    if ! "$DUMP" "$2" "$3" "last:$4" "$TASKS" "$5" kind ${6:+"$6"} > "$T/d.txt" 2>"$T/d.err"; then
        fail "$1: pools_dump: $(head -c 300 "$T/d.err")"
    elif ! "$PY" "$TOP_SRCDIR/tests/pools_oracle.py" "$2" "$3" "$4" "$5" kind ${6:+"$6"} > "$T/o.txt"; then
        fail "$1: pools_oracle.py"
    elif cmp -s "$T/d.txt" "$T/o.txt"; then
        pass "$1: $(grep -c . "$T/d.txt") batch entries = the oracle's"
    else
        fail "$1: the batches differ from the oracle's: $(diff "$T/d.txt" "$T/o.txt" | head -3 | cut -c1-300)"
    fi
}
same_dump "pools on long users, N = 91" "$T/long.h5" 91 4 "top:rating>=6, r:rating>=5.5, lo:click==0"
X="ua:user*artist:1000, uk:user*kind*hour:500,uia:user*item*artist*hour:300"
same_dump "crosses of 2, 3 and 4 keys, with pools" "$T/g.h5" 12 3 "$POOLS" "$X"
"$PY" -c 'import sys, shutil, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    f["user_map"] = 1000003 * np.arange(len(f["offsets"]) - 1, dtype=np.int64) + 2**40' \
    "$T/g.h5" "$T/um.h5" || fail "user_map"
same_dump "no pools, crosses with a /user_map" "$T/um.h5" 12 3 "" "$X"

# --- training: P = 1 and 2 -----------------------------------------------------------
R="data.path=$T/g.h5 train.task=ranking train.tasks=$TASKS data.split=last:3 train.batch_size=8
data.max_seq_len=12 features.event=kind train.log_every=1 train.max_steps=6"
run() {
    name=$1 np=$2; shift 2
    # shellcheck disable=SC2086
    "$MPIRUN" -np "$np" "$FS" train "$IN" $R "output.metrics=$T/$name.jsonl" "$@" \
        >"$T/$name.out" 2>&1 || fail "train $name: $(tail -5 "$T/$name.out")"
}
run p1 1 "data.pools=$POOLS"
run n1 1
grep -q "histories from 3 pools, the last 4 events of each in training (3 in an evaluated history)" \
    "$T/p1.out" || fail "no pools line: $(grep -i pool "$T/p1.out" | head -2)"
losses "$T/p1.jsonl" > "$T/la"
losses "$T/n1.jsonl" > "$T/lb"
cmp -s "$T/la" "$T/lb" && fail "the losses with pools are those without" ||
    pass "the losses with pools differ from those without"
run x1 1 "data.pools=$POOLS" "features.cross=$X"
run x2 2 "data.pools=$POOLS" "features.cross=$X"
same_losses "$T/x1.jsonl" "$T/x2.jsonl" "pools and crosses: P=2 vs P=1" 0 1e-6
same_evals "$T/x1.jsonl" "$T/x2.jsonl" "pools and crosses: P=2 vs P=1" 1e-6
# the pooled sequences (some users with no pooled event) cut into 3 chunks
# over 2 ranks (parallel.split_long; a chunk's first event takes the action
# of the pooled event before it); crosses are refused with it (below)
run p2s 2 "data.pools=$POOLS" parallel.split_long=auto debug.split_chunks=3
same_losses "$T/p1.jsonl" "$T/p2s.jsonl" "pools: split_long P=2 vs P=1 unsplit" 0 1e-6
same_evals "$T/p1.jsonl" "$T/p2s.jsonl" "pools: split_long P=2 vs P=1 unsplit" 1e-6
grep -q '"split_sequences":[1-9]' "$T/p2s.jsonl" || fail "split_long with pools: nothing was cut"
grep -q "event feature uia (a hashed cross, on its item's token): 300 rows" "$T/x1.out" ||
    fail "no cross in the log: $(grep -i cross "$T/x1.out" | head -2)"
losses "$T/p1.jsonl" > "$T/la"
losses "$T/x1.jsonl" > "$T/lb"
cmp -s "$T/la" "$T/lb" && fail "the losses with crosses are those without" ||
    pass "the losses with crosses differ from those without"

# the stream schedule (a window's earlier events history, not targets): P = 1 and 2
run st1 1 "data.pools=$POOLS" train.schedule=stream data.window=1d train.max_steps=0
run st2 2 "data.pools=$POOLS" train.schedule=stream data.window=1d train.max_steps=0
same_losses "$T/st1.jsonl" "$T/st2.jsonl" "pools in the stream schedule: P=2 vs P=1" 0 1e-6

# --- refusals ---------------------------------------------------------------------------
G="data.path=$T/g.h5 train.task=ranking train.tasks=$TASKS data.split=last:3"
expect_error "data.pools: pool a: $T/g.h5 has no /events/nosuch" \
    "$FS" train "$IN" $G data.pools=a:nosuch\>1
expect_error "is not NAME:COLUMN[OP X]" "$FS" train "$IN" $G data.pools=kind\>1
expect_error "3 pools need data.max_seq_len >= 4" "$FS" train "$IN" $G data.max_seq_len=3 \
    "data.pools=$POOLS"
expect_error "data.pools = a:kind: for train.task = ranking" "$FS" train "$IN" \
    "data.path=$T/g.h5" data.pools=a:kind
expect_error "features.cross = a:user*nosuch:9: key 'nosuch' is not user, item, hour" \
    "$FS" train "$IN" $G features.cross=a:user\*nosuch:9
expect_error "'a:user*kind' is not NAME:KEY*KEY[*KEY..]:ROWS" "$FS" train "$IN" $G \
    features.cross=a:user\*kind
expect_error "key 'rating' is a float column" "$FS" train "$IN" $G features.cross=a:user\*rating:9
expect_error "features.cross = a:user*kind:9: for train.task = ranking" "$FS" train "$IN" \
    "data.path=$T/g.h5" features.cross=a:user\*kind:9
expect_error "the key hour needs timestamps" "$FS" train "$IN" $G features.cross=a:user\*hour:9 \
    data.timestamps=off
expect_error "not with parallel.split_long" "$FS" train "$IN" $G features.cross=a:user\*kind:9 \
    parallel.split_long=auto debug.split_chunks=2
finish
