#!/bin/sh
# cli_ties: ties never favour the target (doc/training.md, "Splits and
# evaluation": a target tied with N other candidates is at a uniformly
# random place among them, and the metrics are the expectations).
#   - every item tied: a dynamic item table with nothing admitted
#     (embedding.admit far above any id's lookups) has no item row of its
#     own, so every candidate scores the shared row's score; the test
#     metrics must be exactly the chance figures an oracle computes here
#     from the data (per user: its candidates are the items minus its
#     history, the target at a uniform place among them), on P = 1, 2, 4
#     and through the int8 row codec;
#     the most-popular baseline (items of equal counts tied) against the
#     same oracle's popularity ranks;
#   - recommend over that checkpoint: every list is the K smallest ids the
#     user has not seen (equal scores by id ascending), the same file on
#     P = 1, 2, 4;
#   - a retrieval stream over data gen --stream (new items each day, ids
#     without rows in every window) with a dynamic table and in-batch
#     negatives: the same window metrics on P = 1, 2, 4 to 1e-6 (a shared
#     row's score one rounding apart used to move its whole group).
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
if ! have_h5py; then
    echo "SKIP: $PY cannot import h5py and numpy (the oracle)"
    exit 77
fi
# the oracle: the test split's chance figures (every candidate tied) and the
# popularity baseline's, from the data file; printed as JSON
"$PY" - "$T/tiny.h5" > "$T/oracle.json" <<'EOF' || { fail "oracle"; finish; }
import h5py, json, math, sys
import numpy as np
f = h5py.File(sys.argv[1], "r")
items, off, n_items = f["item_ids"][:], f["offsets"][:], int(f.attrs["num_items"])
HR, NDCG = (1, 10, 50, 200), (10, 50, 200)
def figures(above, ties):  # the mean over the places above .. above + ties
    places = range(above, above + ties + 1)
    m = {"hr@%d" % k: sum(r < k for r in places) / len(places) for k in HR}
    m.update({"ndcg@%d" % k: sum(1 / math.log2(r + 2) for r in places if r < k) / len(places)
              for k in NDCG})
    m["mrr"] = sum(1 / (r + 1) for r in places) / len(places)
    return m
count = np.zeros(n_items + 1, dtype=np.int64)  # popularity: the training events (loo: all but 2)
for u in range(len(off) - 1):
    for e in range(off[u], off[u + 1] - 2):
        count[items[e]] += 1
chance, popular = [], []
for u in range(len(off) - 1):
    seq = items[off[u]:off[u + 1]]
    if len(seq) < 2:
        continue
    target, hist = seq[-1], set(seq[:-1]) - {seq[-1]}
    cand = [i for i in range(1, n_items + 1) if i not in hist and i != target]
    chance.append(figures(0, len(cand)))
    popular.append(figures(sum(count[i] > count[target] for i in cand),
                           sum(count[i] == count[target] for i in cand)))
mean = lambda ms: {k: sum(m[k] for m in ms) / len(ms) for k in ms[0]}
print(json.dumps({"chance": mean(chance), "popular": mean(popular), "users": len(chance)}))
EOF
# same_as NAME JSONL SPLIT KIND: the eval line SPLIT of JSONL equals the oracle's KIND (1e-7:
# the metrics file's 9 digits)
same_as() {
    "$PY" - "$T/oracle.json" "$2" "$3" "$4" > "$T/cmp.out" 2>&1 <<'EOF'
import json, sys
want = json.load(open(sys.argv[1]))
got = [o for o in map(json.loads, open(sys.argv[2]))
       if o.get("event") == "eval" and o.get("split") == sys.argv[3]][-1]
w = want[sys.argv[4]]
assert got["eval_users"] == want["users"], (got["eval_users"], want["users"])
for k, v in w.items():
    assert abs(got[k] - v) <= 1e-7 * max(1, abs(v)), (k, got[k], v)
print("HR@1 %.4f HR@10 %.4f NDCG@10 %.4f MRR %.4f, %d users" %
      (got["hr@1"], got["hr@10"], got["ndcg@10"], got["mrr"], got["eval_users"]))
EOF
}
for P in 1 2 4; do
    "$MPIRUN" -np $P "$FS" train "$IN" "data.path=$T/tiny.h5" embedding.dynamic=on \
        embedding.admit=65535 train.baseline=on "output.metrics=$T/all$P.jsonl" \
        "output.checkpoint_dir=$T/ck$P" > "$T/all$P.out" 2>&1 ||
        { fail "P = $P: $(tail -3 "$T/all$P.out")"; continue; }
    same_as "P = $P" "$T/all$P.jsonl" test chance &&
        pass "nothing admitted, P = $P: the test metrics are the oracle's chance figures ($(cat "$T/cmp.out"))" ||
        fail "nothing admitted, P = $P: $(cat "$T/cmp.out")"
    same_as "P = $P" "$T/all$P.jsonl" test-popular popular &&
        pass "P = $P: the most-popular baseline as the oracle's, ties among equal counts ($(cat "$T/cmp.out"))" ||
        fail "popular, P = $P: $(cat "$T/cmp.out")"
done
# rows through a lossy wire codec: the shared row is still told apart (as the lookups return it)
"$MPIRUN" -np 2 "$FS" train "$IN" "data.path=$T/tiny.h5" embedding.dynamic=on embedding.admit=65535 \
    parallel.rows_codec=int8 "output.metrics=$T/int8.jsonl" > "$T/int8.out" 2>&1 ||
    fail "int8: $(tail -3 "$T/int8.out")"
same_as "int8" "$T/int8.jsonl" test chance &&
    pass "nothing admitted, parallel.rows_codec = int8, P = 2: the chance figures ($(cat "$T/cmp.out"))" ||
    fail "nothing admitted, int8: $(cat "$T/cmp.out")"
# recommend: all scores equal, so the lists are the smallest unseen ids
for P in 1 2 4; do
    ck=$(ls "$T"/ck1/*.h5 | tail -n 1)
    "$MPIRUN" -np $P "$FS" recommend "$ck" --top 12 -o "$T/rec$P.csv" > "$T/rec$P.out" 2>&1 ||
        fail "recommend P = $P: $(tail -3 "$T/rec$P.out")"
done
if cmp -s "$T/rec1.csv" "$T/rec2.csv" && cmp -s "$T/rec1.csv" "$T/rec4.csv"; then
    pass "recommend over all-equal scores: the same file on P = 1, 2, 4"
else
    fail "recommend: P = 1, 2, 4 differ: $(diff "$T/rec1.csv" "$T/rec4.csv" | head -n 3 | tr '\n' ' ')"
fi
"$PY" - "$T/tiny.h5" "$T/rec1.csv" > "$T/cmp.out" 2>&1 <<'EOF' &&
import csv, h5py, sys
f = h5py.File(sys.argv[1], "r")
items, off, n_items = f["item_ids"][:], f["offsets"][:], int(f.attrs["num_items"])
rows = list(csv.DictReader(open(sys.argv[2])))
lists = {}
for r in rows:
    lists.setdefault(int(r["user"]), []).append((int(r["rank"]), int(r["item"]), r["score"]))
assert len(lists) == len(off) - 1, len(lists)
for u, l in lists.items():
    l.sort()
    seen = set(items[off[u]:off[u + 1]])  # users: 0 .. num_users - 1 in a dense dataset
    want = [i for i in range(1, n_items + 1) if i not in seen][:12]
    assert [i for _, i, _ in l] == want, (u, l, want)
    assert len({s for _, _, s in l}) == 1, (u, l)
print("%d users, 12 items each" % len(lists))
EOF
    pass "recommend: every list the 12 smallest unseen ids, one score ($(cat "$T/cmp.out"))" ||
    fail "recommend's order of equal scores: $(tail -3 "$T/cmp.out")"

# a retrieval stream with new items every day: the window metrics on P = 1, 2, 4
"$FS" data gen --stream --days 6 --users 300 --items 400 --new-items-per-day 40 --drift 0.3 \
    --seed 2 -o "$T/s.h5" > /dev/null 2>&1 || { fail "data gen --stream"; finish; }
for P in 1 2 4; do
    "$MPIRUN" -np $P "$FS" train "$IN" "data.path=$T/s.h5" embedding.dynamic=on \
        train.schedule=stream data.window=1d train.negatives_from=in_batch \
        "output.metrics=$T/s$P.jsonl" > "$T/s$P.out" 2>&1 || fail "stream P = $P: $(tail -3 "$T/s$P.out")"
done
for P in 2 4; do
    "$PY" - "$T/s1.jsonl" "$T/s$P.jsonl" > "$T/cmp.out" 2>&1 <<'EOF' &&
import json, sys
load = lambda p: [o for o in map(json.loads, open(p)) if o.get("event") == "window"]
A, B = load(sys.argv[1]), load(sys.argv[2])
assert len(A) == len(B) == 6, (len(A), len(B))
keys = [k for k in A[1] if k.startswith(("hr@", "ndcg@", "mrr", "baseline."))]
worst, n = 0.0, 0
for a, b in zip(A, B):
    for k in keys:
        assert (a[k] is None) == (b[k] is None), (a["window"], k, a[k], b[k])
        if a[k] is not None:
            worst, n = max(worst, abs(a[k] - b[k])), n + 1
assert worst <= 1e-6 and n > 0, worst
assert any(a["eval_events"] > 0 and 0 < a["hr@200"] < 1 for a in A), "degenerate"
print("%d figures, worst difference %.2g" % (n, worst))
EOF
        pass "stream with new items, in-batch negatives: window metrics on P = $P as on P = 1 ($(cat "$T/cmp.out"))" ||
        fail "stream, P = $P vs 1: $(cat "$T/cmp.out")"
done
finish
