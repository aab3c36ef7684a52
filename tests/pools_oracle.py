"""pools_oracle: the lines tests/pools_dump prints, computed independently
from the file with h5py (tests/cli_rank_pools.sh).

    pools_oracle.py FILE.h5 N K POOLS FEATURE [CROSS] > expected.txt

for data.split = last:K, train.tasks = click:binary:click,rating:regression:rating
and data.pools = POOLS (each NAME:COLUMN OP X, COLUMN a float or a
categorical column without a map, OP one of >= > <= < == !=, or COLUMN
alone: != 0; empty: the most recent events). A sequence cut at event `end`
with room L keeps the last L // P events of each of the P pools before
`end` (an event in two pools once; events in no pool left out), in file
order; without pools the last min(end, L) events. CROSS (features.cross,
NAME:KEY*KEY..:ROWS, ...): each token's value of each cross, 1 + xxh64 (seed
0, written here from the specification and checked on its published
vectors) of the keys as little-endian int64 mod ROWS; the keys user (the
/user_map entry, else the index), item, hour ((t // 3600) % 24), an /items
column (the item's value) or an /events column (the event's).
"""
import math
import operator
import re
import struct
import sys

import h5py
import numpy as np

OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
       "==": operator.eq, "!=": operator.ne}


M64 = (1 << 64) - 1
P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                      0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def rnd(acc, lane):
    return (rotl((acc + lane * P2) & M64, 31) * P1) & M64


def xxh64(data, seed=0):
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M64, (seed + P2) & M64, seed, (seed - P1) & M64]
        while i + 32 <= n:
            for j in range(4):
                v[j] = rnd(v[j], int.from_bytes(data[i + 8 * j:i + 8 * j + 8], "little"))
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M64
        for j in range(4):
            h = (((h ^ rnd(0, v[j])) * P1) + P4) & M64
    else:
        h = (seed + P5) & M64
    h = (h + n) & M64
    while i + 8 <= n:
        h = ((rotl(h ^ rnd(0, int.from_bytes(data[i:i + 8], "little")), 27) * P1) + P4) & M64
        i += 8
    if i + 4 <= n:
        h = ((rotl(h ^ (int.from_bytes(data[i:i + 4], "little") * P1 & M64), 23) * P2) + P3) & M64
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * P5 & M64), 11) * P1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P2) & M64
    h ^= h >> 29
    h = (h * P3) & M64
    return h ^ (h >> 32)


# the published XXH64 values (seed 0): the oracle's hash is XXH64
for text, want in ((b"", 0xEF46DB3751D8E999), (b"a", 0xD24EC4F1A98C6E5B),
                   (b"abc", 0x44BC2CF5AD770999),
                   (b"Nobody inspects the spammish repetition", 0xFBCEA83C8A378BF1)):
    assert xxh64(text) == want, (text, hex(xxh64(text)))


def main():
    path, N, K, pools, feature = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    crosses = [e.strip().split(":") for e in (sys.argv[6] if len(sys.argv) > 6 else "").split(",")
               if e.strip()]
    f = h5py.File(path, "r")
    umap = f["user_map"][:] if "user_map" in f else None
    ts = f["timestamps"][:] if "timestamps" in f else None
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
        xs = []
        for _, keys, rows in crosses:
            vals = []
            for k in keys.split("*"):
                if k == "user":
                    vals.append(int(umap[u]) if umap is not None else u)
                elif k == "item":
                    vals.append(int(items[g]))
                elif k == "hour":
                    vals.append(int(ts[g]) // 3600 % 24)
                elif "items" in f and k in f["items"]:
                    vals.append(int(f["items"][k][items[g] - 1]))
                else:
                    vals.append(int(ev[k][g]))
            xs.append(":%d" % (1 + xxh64(struct.pack("<%dq" % len(vals), *vals)) % int(rows)))
        return "%s%d:%d%s:%d%s" % ("*" if cand else "", items[g], e, "".join(lab), ev[feature][g],
                                   "".join(xs))

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
