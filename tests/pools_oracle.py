"""pools_oracle: the lines tests/pools_dump prints, computed independently
from the file with h5py (tests/cli_rank_pools.sh).

    pools_oracle.py FILE.h5 N K POOLS FEATURE > expected.txt

for data.split = last:K, train.tasks = click:binary:click,rating:regression:rating
and data.pools = POOLS (each NAME:COLUMN OP X, COLUMN a float or a
categorical column without a map, OP one of >= > <= < == !=, or COLUMN
alone: != 0; empty: the most recent events). A sequence cut at event `end`
with room L keeps the last L // P events of each of the P pools before
`end` (an event in two pools once; events in no pool left out), in file
order; without pools the last min(end, L) events.
"""
import math
import operator
import re
import sys

import h5py
import numpy as np

OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
       "==": operator.eq, "!=": operator.ne}


def main():
    path, N, K, pools, feature = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    f = h5py.File(path, "r")
    off = f["offsets"][:]
    items = f["item_ids"][:]
    ev = {name: f["events"][name][:] for name in f["events"]}
    preds = []
    for entry in [e for e in pools.split(",") if e.strip()]:
        _, expr = entry.split(":", 1)
        m = re.fullmatch(r"\s*(\w+)\s*(>=|<=|==|!=|>|<)\s*([-+.\deE]+)\s*", expr)
        if m:
            col, op, x = m.group(1), OPS[m.group(2)], float(m.group(3))
        else:
            col, op, x = expr.strip(), operator.ne, 0.0
        v = ev[col].astype(np.float64)
        if v.dtype != np.float64 or ev[col].dtype.kind in "iu":
            v = np.where(ev[col] == 0, np.nan, v)  # categorical id 0: missing
        preds.append(np.array([not math.isnan(a) and op(a, x) for a in v]))

    def select(u, end, room):
        e0 = off[u]
        if not preds:
            return list(range(max(0, end - room), end))
        per = room // len(preds)
        chosen = set()
        for p in preds:
            idx = [e for e in range(end) if p[e0 + e]]
            chosen.update(idx[max(0, len(idx) - per):] if per > 0 else [])
        return sorted(chosen)

    def tok(u, e, cand):
        g = off[u] + e
        click = ev["click"][g]
        lab = [":nan" if math.isnan(click) else ":%g" % float(click != 0),
               ":nan" if math.isnan(ev["rating"][g]) else ":%g" % np.float32(ev["rating"][g])]
        return "%s%d:%d%s:%d" % ("*" if cand else "", items[g], e, "".join(lab), ev[feature][g])

    U = len(off) - 1
    bounds = []
    for u in range(U):
        L = off[u + 1] - off[u]
        b = max(L - K, 0)
        a = max(L - 2 * K, 0)
        bounds.append((a, b, L))
    out = []
    for u in range(U):
        a, b, L = bounds[u]
        if a > 0:
            out.append(" ".join(["train %d" % u] + [tok(u, e, 0) for e in select(u, a, N)]))
    for name, test in (("val", 0), ("test", 1)):
        for u in range(U):
            a, b, L = bounds[u]
            c0, c1 = (b, L) if test else (a, b)
            if c1 > c0:
                h = select(u, c0, N - 1)
                out.append(" ".join(["%s %d" % (name, u)] + [tok(u, e, 0) for e in h] +
                                    [tok(u, e, 1) for e in range(c0, c1)]))
        if test:
            for u in range(U):
                a, b, L = bounds[u]
                if L - b >= 3:
                    h = select(u, b, N - 1)
                    out.append(" ".join(["part %d" % u] + [tok(u, e, 0) for e in h] +
                                        [tok(u, e, 1) for e in (b + 1, b + 2)]))
    print("\n".join(out))


main()
