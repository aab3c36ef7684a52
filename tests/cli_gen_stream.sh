#!/bin/sh
# cli_gen_stream: data gen --stream (tools/data_gen_stream.h), checked by
# h5py against the model it documents:
#   - the files are a function of the options (two runs: the same datasets
#     and attributes, the single file and every day file);
#   - every file is a valid raw-id dataset (data check); its items are the
#     documented ids f(k) of the items of the catalog of that day or before,
#     its users f(2^62 + u), sorted;
#   - new items first appear on their day (none earlier; at least 90% of
#     each day's new items are used that day: they enter at the top);
#   - the per-day files concatenated, user by user, are the single file's
#     events (items, times, actions), and so are the files of --file-days 3;
#     day d's times lie in day d;
#   - --labels: /events/like 0/1 and /events/rating, the events unchanged
#     (the same as without it), a higher rating where liked;
#   - drift: without it the most used item of the first and the last day is
#     the same; with it the first day's top item falls and the top-10 sets
#     barely overlap;
#   - --taste-drift: the events and day 0's labels those without it, later
#     days' labels not; a user's like rate on day 3 follows day 0's without
#     it (correlation over users > 0.3) and not with 0.5 rad a day (< 0.15);
#   - bad options refused by name.
. "$(dirname "$0")/lib.sh"
have_h5py || { echo "SKIP: $PY cannot import h5py and numpy"; exit 77; }
G="--stream --days 8 --users 300 --items 400 --new-items-per-day 20 --drift 0.05 --actions --labels --seed 5"
expect_ok "$FS" data gen $G -o "$T/a.h5" --split-days "$T/A"
expect_ok "$FS" data gen $G -o "$T/b.h5" --split-days "$T/B"
expect_ok "$FS" data check "$T/a.h5" "$T"/A/day-*.h5
expect_ok "$FS" data gen $G --split-days "$T/C" --file-days 3
expect_ok "$FS" data gen $(echo "$G" | sed 's/ --labels//') -o "$T/nolabels.h5"
[ "$(ls "$T/C" | tr '\n' ' ')" = "day-0000.h5 day-0003.h5 day-0006.h5 " ] || fail "--file-days 3: $(ls "$T/C")"
[ "$(ls "$T/A" | wc -l)" = 8 ] || fail "expected 8 day files, got: $(ls "$T/A")"
# drift alone (no new items): 0 and 0.15 a day over 4 days
D="--stream --days 4 --users 400 --items 500 --active 1 --per-day 4,8 --seed 9"
expect_ok "$FS" data gen $D --drift 0 --split-days "$T/D0"
expect_ok "$FS" data gen $D --drift 0.15 --split-days "$T/D1"
# tastes: 0 and 0.5 rad a day, many events a user
L="--stream --days 4 --users 400 --items 500 --active 1 --per-day 20,30 --labels --seed 9"
expect_ok "$FS" data gen $L -o "$T/L0.h5"
expect_ok "$FS" data gen $L --taste-drift 0.5 -o "$T/L1.h5"

"$PY" - "$T" <<'PYEOF' > "$T/p.out" 2>&1 && pass "$(tail -1 "$T/p.out")" || fail "stream: $(cat "$T/p.out")"
import sys, os, h5py, numpy as np
T = sys.argv[1]
M = (1 << 63) - 1
def f(x):
    x = (x * 0x9E3779B97F4A7C15) & M; x ^= x >> 29
    x = (x * 0xBF58476D1CE4E5B9) & M; x ^= x >> 32
    return x
def same(p, q):
    a, b = h5py.File(p, "r"), h5py.File(q, "r")
    assert dict(a.attrs) == dict(b.attrs), p
    names = []
    a.visit(lambda n: names.append(n) if isinstance(a[n], h5py.Dataset) else None)
    for n in names:
        assert np.array_equal(a[n][:], b[n][:]), (p, n)
    return len(names)
days, I, N, U = 8, 400, 20, 300
same(f"{T}/a.h5", f"{T}/b.h5")
for d in range(days):
    same(f"{T}/A/day-{d:04d}.h5", f"{T}/B/day-{d:04d}.h5")
index = {f(k): k for k in range(1, I + (days - 1) * N + 1)}
users = {f((1 << 62) + u) for u in range(U)}
first = {}
per_user = {}
for d in range(days):
    h = h5py.File(f"{T}/A/day-{d:04d}.h5", "r")
    assert h.attrs["version"] == 3 and h.attrs["ids"] in (b"raw", "raw")
    um, off, it, ts, ac = (h[k][:] for k in ("user_map", "offsets", "item_ids", "timestamps", "actions"))
    assert set(um) <= users and np.all(np.diff(um) > 0)
    assert np.array_equal(h["items/ids"][:], np.unique(it))
    ks = np.array([index[int(x)] for x in it])   # KeyError: not a catalog id
    assert ks.max() <= I + d * N, (d, ks.max())   # nothing from a later day's catalog
    t0 = 1577836800 + d * 86400
    assert ts.min() >= t0 and ts.max() < t0 + 86400, d
    for k in set(ks.tolist()):
        first.setdefault(k, d)
    for j, u in enumerate(um):
        s = slice(off[j], off[j + 1])
        per_user.setdefault(int(u), []).append((it[s], ts[s], ac[s], h["events/like"][s], h["events/rating"][s]))
for d in range(1, days):
    new = range(I + (d - 1) * N + 1, I + d * N + 1)
    assert all(first.get(k, d) == d for k in new), d            # never before their day
    assert sum(first.get(k) == d for k in new) >= 0.9 * N, d   # mostly used on it
one = h5py.File(f"{T}/a.h5", "r")
um, off = one["user_map"][:], one["offsets"][:]
assert list(um) == sorted(per_user), "the single file's users are the day files' users"
for j, u in enumerate(um):
    s = slice(off[j], off[j + 1])
    for n, k in enumerate(("item_ids", "timestamps", "actions", "events/like", "events/rating")):
        assert np.array_equal(one[k][s], np.concatenate([p[n] for p in per_user[int(u)]])), (u, k)
nl = h5py.File(f"{T}/nolabels.h5", "r")   # labels drawn apart: the same events without them
for k in ("offsets", "user_map", "item_ids", "timestamps", "actions", "items/ids"):
    assert np.array_equal(one[k][:], nl[k][:]), k
assert "events" not in nl
like, rating = one["events/like"][:], one["events/rating"][:]
assert like.dtype == np.float32 and set(np.unique(like)) == {0.0, 1.0} and rating.dtype == np.float32
assert rating[like == 1].mean() > rating[like == 0].mean() + 0.2, "like and rating share the score"
for j, u in enumerate(um):   # the same with three days a file
    got = [[], [], []]
    for d in (0, 3, 6):
        h = h5py.File(f"{T}/C/day-{d:04d}.h5", "r")
        w = np.searchsorted(h["user_map"][:], u)
        if w < len(h["user_map"]) and h["user_map"][w] == u:
            s = slice(h["offsets"][w], h["offsets"][w + 1])
            for n, k in enumerate(("item_ids", "timestamps", "actions")):
                got[n].append(h[k][s])
    s = slice(off[j], off[j + 1])
    for n, k in enumerate(("item_ids", "timestamps", "actions")):
        assert np.array_equal(one[k][s], np.concatenate(got[n])), ("file-days", u, k)
def tops(path, d, n):
    it = h5py.File(f"{path}/day-{d:04d}.h5", "r")["item_ids"][:]
    v, c = np.unique(it, return_counts=True)
    o = np.lexsort((v, -c))
    return list(v[o][:n]), dict(zip(v.tolist(), c.tolist()))
t00, _ = tops(f"{T}/D0", 0, 10); t03, _ = tops(f"{T}/D0", 3, 10)
t10, c10 = tops(f"{T}/D1", 0, 10); t13, c13 = tops(f"{T}/D1", 3, 10)
_, c11 = tops(f"{T}/D1", 1, 10)
assert t00 == t10, "drift starts after day 0"
assert t00[0] == t03[0] and len(set(t00) & set(t03)) >= 6, (t00, t03)
assert len(set(t10) & set(t13)) <= 2, (t10, t13)
assert c11.get(t10[0], 0) < c10[t10[0]] / 10, "yesterday's top item falls to the tail"
def rates(path):   # each user's like rate on day 0 and on day 3; the file
    h = h5py.File(path, "r")
    off, ts, like = h["offsets"][:], h["timestamps"][:], h["events/like"][:]
    day = (ts - 1577836800) // 86400
    r = np.array([[like[off[j]:off[j + 1]][day[off[j]:off[j + 1]] == d].mean() for d in (0, 3)]
                  for j in range(len(off) - 1)])
    return r, h
(r0, l0), (r1, l1) = rates(f"{T}/L0.h5"), rates(f"{T}/L1.h5")
for k in ("offsets", "user_map", "item_ids", "timestamps", "items/ids"):
    assert np.array_equal(l0[k][:], l1[k][:]), k
d0 = (l0["timestamps"][:] - 1577836800) // 86400 == 0
assert np.array_equal(l0["events/like"][:][d0], l1["events/like"][:][d0]), "day 0's labels"
assert not np.array_equal(l0["events/like"][:][~d0], l1["events/like"][:][~d0]), "later labels"
c0, c1 = np.corrcoef(r0.T)[0, 1], np.corrcoef(r1.T)[0, 1]
assert c0 > 0.3 and c1 < 0.15, (c0, c1)
print(f"stream: deterministic; {len(first)} items, new ones on their day; day files = the single file "
      f"({len(um)} users, {len(one['item_ids'])} events); top-10 overlap day 0 vs 3: "
      f"{len(set(t00) & set(t03))} without drift, {len(set(t10) & set(t13))} with 0.15; "
      f"like rate day 0 vs 3 correlated {c0:.2f} without taste drift, {c1:.2f} with 0.5")
PYEOF
expect_error "--days, --users and --items are required" "$FS" data gen --stream --users 3 --items 3 -o "$T/x.h5"
expect_error "--drift" "$FS" data gen --stream --days 2 --users 3 --items 3 --drift 2 -o "$T/x.h5"
expect_error "--per-day: '5,2' is not A,B" "$FS" data gen --stream --days 2 --users 3 --items 3 --per-day 5,2 -o "$T/x.h5"
expect_error "give -o OUT.h5, --split-days DIR or both" "$FS" data gen --stream --days 2 --users 3 --items 3
expect_error "--taste-drift drifts the labels' users: it needs --labels" "$FS" data gen --stream --days 2 --users 3 --items 3 --taste-drift 0.1 -o "$T/x.h5"
no_file "$T/x.h5"
finish
