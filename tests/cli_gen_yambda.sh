#!/bin/sh
# cli_gen_yambda: data gen --yambda (tools/data_gen_yambda.h) and data
# import --format yambda:
#   - the files are a function of the options (two runs: the same bytes);
#     --planted-scores adds /events/planted_p and the factors and changes
#     nothing else;
#   - the day files concatenated user by user are the single file's
#     events, each in its day; the columns are Yambda's (event types with
#     fixed ids, listens the vast majority, a non-listen's played ratio and
#     track length 0, is_organic 0/1), an album has one artist, the users'
#     median length is near --median-length;
#   - the generator's --csv (Yambda's multi_event columns, nulls as empty
#     fields) and --items-csv imported by --format yambda give the same
#     events, times, users, items, event columns and item features, and so
#     does the same table as JSON lines (nulls as null); --split-days gives
#     the generator's day files, dataset by dataset; a table with some
#     event types only keeps the event types' ids;
#   - an oracle in numpy recomputes the planted optimum (AUC with ties
#     halved, logloss, positive rate) of the last day from /events/planted_p
#     and the labels played_ratio_pct >= 50, recomputes planted_p itself
#     from the written factors (/planted_users, /planted_tracks) and the
#     model's formula (the optimum within 0.001 AUC from its float64 p),
#     checks the event types' counts against the model's expectation and
#     that the labels are drawn from planted_p (calibration by deciles);
#   - a second numpy oracle recomputes the optimum of what the history
#     shows (planted_posterior_auc, _logloss, _ne) from the written factors
#     (/planted_tracks, /planted_artists) and the events before the last
#     day: its own Newton fit of each user's (p_u, a_u) posterior and
#     Gauss-Hermite quadrature (the generator: a trapezoid rule), within
#     1e-6;
#   - bad inputs are refused with FILE:LINE or the option.
. "$(dirname "$0")/lib.sh"
have_h5py || { echo "SKIP: $PY cannot import h5py and numpy"; exit 77; }
G="--yambda --days 5 --users 300 --tracks 800 --albums 200 --artists 60 --median-length 60 --seed 3"
expect_ok "$FS" data gen $G -o "$T/a.h5" --split-days "$T/days" --csv "$T/a.csv" --items-csv "$T/items.csv"
expect_ok "$FS" data gen $G -o "$T/b.h5" --planted-scores --split-days "$T/bdays"
expect_ok "$FS" data gen $G -o "$T/c.h5" --split-days "$T/cdays"
expect_ok "$FS" data gen $G --factors 5 --artist-share 0.5 --taste 1 --planted-scores -o "$T/f5.h5"
cmp -s "$T/a.h5" "$T/c.h5" && cmp -s "$T/days/day-0004.h5" "$T/cdays/day-0004.h5" &&
    pass "the same options, the same bytes" || fail "two runs of the same options differ"
expect_ok "$FS" data import --format yambda "$T/a.csv" --item-features "$T/items.csv" -o "$T/imp.h5" --split-days "$T/idays"
"$PY" - "$T" <<'PYEOF' > "$T/p.out" 2>&1 && pass "$(tail -1 "$T/p.out")" || fail "yambda: $(cat "$T/p.out")"
import sys, json, h5py, numpy as np
T = sys.argv[1]
a, b, imp = (h5py.File(f"{T}/{n}.h5", "r") for n in ("a", "b", "imp"))
def names(f):
    out = []
    f.visititems(lambda n, o: out.append(n) if isinstance(o, h5py.Dataset) else None)
    return sorted(out)
# determinism, and --planted-scores changes nothing else
assert names(b) == sorted(names(a) + ["events/planted_p", "planted_artists", "planted_tracks", "planted_users"]), (names(a), names(b))
for n in names(a):
    assert np.array_equal(a[n][()], b[n][()]), n
assert {k: v for k, v in a.attrs.items()} == {k: v for k, v in b.attrs.items() if k != "planted_taste"}
def s(x): return x.decode() if isinstance(x, bytes) else str(x)
# Yambda's columns
et = a["events/event_type"][:]
assert [s(x) for x in a["feature_maps/events/event_type"][:]] == ["dislike", "like", "listen", "undislike", "unlike"]
assert [s(x) for x in a["feature_maps/events/is_organic"][:]] == ["0", "1"]
share = np.bincount(et, minlength=6)[1:] / len(et)
assert share[2] > 0.9 and share[1] > 0.005 and all(share > 0), share
pr, tl = a["events/played_ratio_pct"][:], a["events/track_length_seconds"][:]
assert np.all(pr[et != 3] == 0) and np.all(tl[et != 3] == 0) and np.all(tl[et == 3] > 0)
assert pr.min() >= 0 and pr.max() <= 100 and np.all(pr == np.floor(pr))
assert set(np.unique(a["events/is_organic"][:])) == {1, 2}
off = a["offsets"][:]
med = np.median(np.diff(off))
assert 45 <= med <= 80, med
ts = a["timestamps"][:]
assert np.all(ts % 5 == 0) and ts.min() >= 0 and ts.max() < 5 * 86400
# an album has one artist
al, ar = a["items/album"][:], a["items/artist"][:]
alv = np.array([int(s(x)) for x in a["feature_maps/items/album"][:]])[al - 1]
arv = np.array([int(s(x)) for x in a["feature_maps/items/artist"][:]])[ar - 1]
for v in np.unique(alv):
    assert len(np.unique(arv[alv == v])) == 1, v
# the day files, user by user, are the single file's events
um = a["user_map"][:]
ev = {u: [] for u in um}
for d in range(5):
    f = h5py.File(f"{T}/days/day-{d:04d}.h5", "r")
    fo, fu = f["offsets"][:], f["user_map"][:]
    ft = f["timestamps"][:]
    assert np.all(ft // 86400 == d), d
    cols = [f["item_ids"][:], ft, f["events/event_type"][:], f["events/played_ratio_pct"][:]]
    for i, u in enumerate(fu):
        ev[u] += list(zip(*(c[fo[i]:fo[i + 1]] for c in cols)))
cols = [a["item_ids"][:], ts, et, pr]
for i, u in enumerate(um):
    assert ev[u] == list(zip(*(c[off[i]:off[i + 1]] for c in cols))), u
# the import equals the generator's file
for n in ("offsets", "item_ids", "timestamps", "user_map", "items/ids", "events/event_type",
          "events/is_organic", "events/played_ratio_pct", "events/track_length_seconds",
          "items/artist", "items/album", "feature_maps/items/artist", "feature_maps/items/album",
          "feature_maps/events/event_type", "feature_maps/events/is_organic"):
    x, y = a[n][()], imp[n][()]
    if x.dtype.kind in "SO":
        x, y = [s(v) for v in x], [s(v) for v in y]
        assert x == y, n
    else:
        assert np.array_equal(x, y), n
# --split-days: each day file equals the generator's
for d in range(5):
    g, i = (h5py.File(f"{T}/{x}/day-{d:04d}.h5", "r") for x in ("days", "idays"))
    assert names(g) == names(i), (names(g), names(i))
    for n in names(g):
        x, y = g[n][()], i[n][()]
        assert (x.dtype.kind in "SO" and [s(v) for v in x] == [s(v) for v in y]) or np.array_equal(x, y), (d, n)
# the oracle of the planted optimum: the last day, from planted_p and the labels
f = h5py.File(f"{T}/bdays/day-0004.h5", "r")
p = f["events/planted_p"][:].astype(np.float64)
y = (f["events/played_ratio_pct"][:] >= 50).astype(np.float64)
order = np.argsort(p, kind="mergesort")
ps, ys = p[order], y[order]
_, start, counts = np.unique(ps, return_index=True, return_counts=True)
ranks = np.empty(len(p))
for st, c in zip(start, counts):
    ranks[st:st + c] = st + (c + 1) / 2.0  # ties halved
npos = ys.sum()
auc = (ranks[ys == 1].sum() - npos * (npos + 1) / 2) / (npos * (len(y) - npos))
ll = -np.mean(y * np.log(p) + (1 - y) * np.log1p(-p))
at = f.attrs
assert abs(at["planted_auc"] - auc) < 1e-9, (at["planted_auc"], auc)
assert abs(at["planted_logloss"] - ll) < 1e-9 and abs(at["planted_positive_rate"] - y.mean()) < 1e-12
assert at["planted_test_events"] == len(y) and at["planted_test_day"] == 4
assert s(at["planted_tasks"]) == "listen_plus:binary:played_ratio_pct>=50"
assert a.attrs["planted_auc"] == at["planted_auc"]
# the model from the written factors: planted_p, the optimum, the event types
def model(f):
    U, Q = f["planted_users"][:], f["planted_tracks"][:]
    off = f["offsets"][:]
    u = np.repeat(np.arange(len(off) - 1), np.diff(off))
    k = np.searchsorted(f["items/ids"][:], f["item_ids"][:])
    F = U.shape[1] - 1
    sc = 0.3 + U[u, F] + Q[k, F] + f.attrs["planted_taste"] * (U[u, :F] * Q[k, :F]).sum(1) / np.sqrt(F)
    sig = 1 / (1 + np.exp(-sc))
    return sig, (1 - 0.04 * sig - 0.012 * (1 - sig) - 0.004) * sig
sig, p64 = model(f)
assert np.allclose(p64, p, rtol=1e-6, atol=0), np.abs(p64 - p).max()
def auc_of(p, y):
    order = np.argsort(p, kind="mergesort"); ps, ys = p[order], y[order]
    _, st, ct = np.unique(ps, return_index=True, return_counts=True)
    r = np.empty(len(p))
    for a0, c in zip(st, ct):
        r[a0:a0 + c] = a0 + (c + 1) / 2.0
    npos = ys.sum()
    return (r[ys == 1].sum() - npos * (npos + 1) / 2) / (npos * (len(y) - npos))
assert abs(auc_of(p64, y) - at["planted_auc"]) < 1e-3, (auc_of(p64, y), at["planted_auc"])
f5 = h5py.File(f"{T}/f5.h5", "r")  # other factors, a track part: the same formula
assert f5["planted_users"].shape[1] == 6 and f5.attrs["planted_taste"] == 1
assert np.allclose(model(f5)[1], f5["events/planted_p"][:], rtol=1e-6, atol=0)
sig, _ = model(b)
et_b = b["events/event_type"][:]
for t, pt in ((2, 0.04 * sig), (1, 0.012 * (1 - sig)), (5, 0.003 + 0 * sig), (4, 0.001 + 0 * sig)):
    assert abs((et_b == t).sum() - pt.sum()) < 4.5 * np.sqrt((pt * (1 - pt)).sum()) + 1, (t, (et_b == t).sum(), pt.sum())
# calibration: the labels of every event are drawn from planted_p
P = b["events/planted_p"][:].astype(np.float64)
Y = (b["events/played_ratio_pct"][:] >= 50).astype(np.float64)
for q in np.array_split(np.argsort(P), 10):
    m, sd = P[q].mean(), np.sqrt((P[q] * (1 - P[q])).sum()) / len(q)
    assert abs(Y[q].mean() - m) < 4.5 * sd + 1e-3, (Y[q].mean(), m, sd)
# the same table as JSON lines (nulls as null)
with open(f"{T}/a.csv") as fi, open(f"{T}/a.jsonl", "w") as fo:
    head = fi.readline().strip().split(",")
    for line in fi:
        r = dict(zip(head, line.strip().split(",")))
        o = {k: (None if r[k] == "" else r[k] if k == "event_type" else int(r[k])) for k in head}
        fo.write(json.dumps(o) + "\n")
print(f"yambda: {len(et)} events, median length {med:.0f}, listens {share[2]:.3f}, "
      f"optimum AUC {auc:.4f} on {len(y)} last-day events (oracle equal)")
PYEOF
expect_ok "$FS" data import --format yambda "$T/a.jsonl" --item-features "$T/items.csv" -o "$T/impj.h5"
"$PY" - "$T/imp.h5" "$T/impj.h5" <<'PYEOF' > "$T/j.out" 2>&1 && pass "JSON lines: the same import" || fail "jsonl: $(cat "$T/j.out")"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
for n in ("offsets", "item_ids", "timestamps", "user_map", "events/event_type", "events/is_organic",
          "events/played_ratio_pct", "events/track_length_seconds", "items/artist", "items/album"):
    assert np.array_equal(a[n][()], b[n][()]), n
PYEOF
# the optimum of what the history shows, recomputed from the factors
"$PY" - "$T/b.h5" <<'PYEOF' > "$T/q.out" 2>&1 && pass "$(tail -1 "$T/q.out")" || fail "posterior optimum: $(cat "$T/q.out")"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
at = f.attrs
U, Q, W = f["planted_users"][:], f["planted_tracks"][:], f["planted_artists"][:]
F = U.shape[1] - 1
G = at["planted_taste"]
last = int(at["planted_test_day"])
off = f["offsets"][:]
k = np.searchsorted(f["items/ids"][:], f["item_ids"][:])
amap = np.array([int(v) for v in f["feature_maps/items/artist"][:]])
art = amap[f["items/artist"][:][k] - 1]        # each event's artist number
et, org = f["events/event_type"][:], f["events/is_organic"][:] == 2
pct, day = f["events/played_ratio_pct"][:].astype(np.float64), f["timestamps"][:] // 86400
X = np.hstack([G * Q[k, :F] / np.sqrt(F), np.ones((len(k), 1))])
B = 0.3 + Q[k, F]
Wa, live = W[:, :F] / np.sqrt(F), W[:, F] > 0
sgm = lambda x: 1 / (1 + np.exp(-x))
lgt = lambda p: np.log(p / (1 - p))
lo = np.where(pct <= 0, -np.inf, lgt(np.clip(pct, 1, 99) / 100))
hi = np.where(pct >= 99, np.inf, lgt(np.clip(pct + 1, 1, 99) / 100))
prior = np.r_[np.ones(F), 0.25]
def terms(i, t):  # log posterior, gradient, Hessian (P(listen)'s curvature clipped at 0)
    s = B[i] + X[i] @ t
    sg = sgm(s); fs = sg * (1 - sg)
    lp = -0.5 * np.sum(t * t / prior)
    d, dd = np.zeros(len(i)), np.zeros(len(i))
    m = et[i] == 2; lp += np.sum(np.log(sg[m])); d[m] = 1 - sg[m]; dd[m] = -fs[m]
    m = et[i] == 1; lp += np.sum(np.log1p(-sg[m])); d[m] = -sg[m]; dd[m] = -fs[m]
    m = et[i] == 3
    u = 0.984 - 0.028 * sg[m]; u1 = -0.028 * fs[m]; u2 = u1 * (1 - 2 * sg[m])
    a, b = lo[i][m] - s[m], hi[i][m] - s[m]
    Fa, Fb = sgm(a), sgm(b)
    Dv = np.where(a > 0, sgm(-a) - sgm(-b), Fb - Fa)
    fa, fb = Fa * (1 - Fa), Fb * (1 - Fb)
    g1 = (fa - fb) / Dv
    lp += np.sum(np.log(u) + np.log(Dv))
    d[m] = u1 / u + g1
    dd[m] = np.minimum(u2 / u - (u1 / u) ** 2, 0) + (fb * (1 - 2 * Fb) - fa * (1 - 2 * Fa)) / Dv - g1 ** 2
    g = X[i].T @ d - t / prior
    H = (X[i].T * dd) @ X[i] - np.diag(1 / prior)
    n = org[i].sum()
    if n:
        z = Wa[live] @ t[:F]
        e = np.exp(z - z.max()); pi = e / e.sum()
        mu = pi @ Wa[live]
        wsum = Wa[art[i][org[i]] - 1].sum(0)
        lp += t[:F] @ wsum - n * (z.max() + np.log(e.sum()))
        g[:F] += wsum - n * mu
        H[:F, :F] -= n * ((Wa[live].T * pi) @ Wa[live] - np.outer(mu, mu))
    return lp, g, H
zs, ws = np.polynomial.hermite.hermgauss(60)
P, Y = [], []
for u in range(len(off) - 1):
    ev = np.arange(off[u], off[u + 1])
    h, te = ev[day[ev] < last], ev[day[ev] == last]
    if not len(te):
        continue
    t = np.zeros(F + 1)
    lp, g, H = terms(h, t)
    for _ in range(100):
        step = np.linalg.solve(-H, g)
        if step @ g < 1e-18:
            break
        a = 1.0
        while True:
            lp2, g2, H2 = terms(h, t + a * step)
            if lp2 >= lp - 1e-12 or a < 1e-12:
                break
            a /= 2
        t, lp, g, H = t + a * step, lp2, g2, H2
    S = np.linalg.inv(-terms(h, t)[2])
    for j in te:
        m, v = B[j] + X[j] @ t, X[j] @ S @ X[j]
        s = m + np.sqrt(2 * v) * zs
        P.append(np.sum(ws * (0.984 - 0.028 * sgm(s)) * sgm(s)) / np.sqrt(np.pi))
        Y.append(float(pct[j] >= 50))
P, Y = np.array(P), np.array(Y)
pos, neg = np.sort(P[Y == 1]), P[Y == 0]
above, atl = np.searchsorted(pos, neg, "right"), np.searchsorted(pos, neg, "left")
auc = np.sum(len(pos) - above + 0.5 * (above - atl)) / (len(pos) * len(neg))  # ties halved
ll = -np.mean(Y * np.log(P) + (1 - Y) * np.log1p(-P))
r = Y.mean()
ne = ll / -(r * np.log(r) + (1 - r) * np.log1p(-r))
assert len(P) == at["planted_test_events"], (len(P), at["planted_test_events"])
assert abs(at["planted_posterior_auc"] - auc) < 1e-6, (at["planted_posterior_auc"], auc)
assert abs(at["planted_posterior_logloss"] - ll) < 1e-6 and abs(at["planted_posterior_ne"] - ne) < 1e-6, (dict(at), ll, ne)
print(f"yambda posterior optimum = the numpy oracle on {len(P)} events of day {last}: AUC {auc:.4f} NE {ne:.4f} "
      f"(planted AUC {at['planted_auc']:.4f})")
PYEOF
# a day whose table lacks some event types keeps their ids
head -1 "$T/a.csv" > "$T/few.csv"
grep -E ',listen$|,unlike$' "$T/a.csv" | head -50 >> "$T/few.csv"
expect_ok "$FS" data import --format yambda "$T/few.csv" -o "$T/few.h5"
"$PY" -c "
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'r')
m = [x.decode() if isinstance(x, bytes) else x for x in f['feature_maps/events/event_type'][:]]
assert m == ['dislike', 'like', 'listen', 'undislike', 'unlike'], m
assert set(np.unique(f['events/event_type'][:])) <= {3, 5}
" "$T/few.h5" && pass "fixed event type ids" || fail "event type ids of a partial table"
# bad inputs
printf 'uid,item_id,timestamp,is_organic,played_ratio_pct,track_length_seconds,event_type\n1,2,5,1,50,200,listen\n1,3,10,0,,,skip\n' > "$T/bad1.csv"
expect_error "bad1.csv:3: field 'event_type' = 'skip' is not one of dislike, like, listen, undislike, unlike" \
    "$FS" data import --format yambda "$T/bad1.csv" -o "$T/x.h5"
printf 'uid,item_id,timestamp,is_organic,played_ratio_pct,track_length_seconds,event_type\n1,2,5,2,50,200,listen\n' > "$T/bad2.csv"
expect_error "bad2.csv:2: field 'is_organic' = '2' is not one of 0, 1" "$FS" data import --format yambda "$T/bad2.csv" -o "$T/x.h5"
printf 'uid,item_id,timestamp,is_organic,played_ratio_pct,track_length_seconds,event_type\n1,2,5,1,half,200,listen\n' > "$T/bad3.csv"
expect_error "bad3.csv:2: field 'played_ratio_pct' = 'half' is not a number" "$FS" data import --format yambda "$T/bad3.csv" -o "$T/x.h5"
printf 'uid,item_id,timestamp,is_organic,played_ratio_pct,event_type\n1,2,5,1,50,listen\n' > "$T/bad4.csv"
expect_error "track_length_seconds" "$FS" data import --format yambda "$T/bad4.csv" -o "$T/x.h5"
printf '{"uid": 1, "item_id": 2, "timestamp": 5, "is_organic": 1, "played_ratio_pct": 50, "track_length_seconds": 200, "event_type": "listen"}\n{"uid": 1, "item_id": 2, "timestamp": 1.5e1, "is_organic": 1, "played_ratio_pct": null, "track_length_seconds": null, "event_type": "lk"}\n' > "$T/bad5.jsonl"
expect_error "bad5.jsonl:2: field 'event_type' = 'lk' is not one of" "$FS" data import --format yambda "$T/bad5.jsonl" -o "$T/x.h5"
expect_error "--format yambda names its columns itself" "$FS" data import --format yambda --user-col user "$T/bad1.csv" -o "$T/x.h5"
no_file "$T/x.h5"
expect_error "--median-length 500 is above --max-length 100" "$FS" data gen --yambda --median-length 500 --max-length 100 -o "$T/x.h5"
expect_error "give -o OUT.h5, --split-days DIR or --csv FILE" "$FS" data gen --yambda --days 2
expect_error "unknown option '--tracks-per-album'" "$FS" data gen --yambda --tracks-per-album 5 -o "$T/x.h5"
no_file "$T/x.h5"

# --- a categorical column's value names in a task and a pool (event_type==like) --------
# the batches the trainer builds (tests/pools_dump): a token's label lk is 1 exactly
# where its event_type is like (id 2), nl the opposite; with the pool of likes alone
# every history token is a like
DUMP=$(dirname "$FS")/tests/pools_dump
"$FS" data gen --yambda --days 3 --users 30 --tracks 100 --median-length 60 --seed 2 \
    -o "$T/ys.h5" >/dev/null || fail "data gen --yambda (small)"
W="lk:binary:event_type==like,nl:binary:event_type!=like"
if "$DUMP" "$T/ys.h5" 30 last:2 "$W" "" event_type > "$T/w.txt" 2>"$T/w.err" &&
    "$DUMP" "$T/ys.h5" 30 last:2 "$W" "lk:event_type==like, ls:played_ratio_pct>=50" event_type \
        > "$T/wp.txt" 2>>"$T/w.err" &&
    "$DUMP" "$T/ys.h5" 30 last:2 "$W" "lk:event_type==like" event_type > "$T/wl.txt" 2>>"$T/w.err"
then
    cat "$T/w.txt" "$T/wp.txt" | awk '{ for (i = 3; i <= NF; i++) { split($i, f, ":"); n++
            like = f[5] == 2; likes += like
            if (f[3] != like || f[4] != 1 - like) bad++ } }
        END { print n, likes; exit bad || !likes || likes == n }' > "$T/w.n" &&
        pass "event_type==like / !=like: the labels of $(cut -d' ' -f1 "$T/w.n") tokens ($(cut -d' ' -f2 "$T/w.n") likes)" ||
        fail "event_type==like: labels do not follow the type ($(cat "$T/w.n"))"
    awk '$1 == "train" { for (i = 3; i <= NF; i++) { split($i, f, ":"); n++; if (f[5] != 2) bad++ } }
        END { exit bad || !n }' "$T/wl.txt" &&
        pass "data.pools = lk:event_type==like: every training token is a like" ||
        fail "data.pools = lk:event_type==like: a token of another type"
else
    fail "pools_dump with words: $(head -c 300 "$T/w.err")"
fi
expect_error "has no value 'likes' (its values: dislike, like, listen, undislike, unlike)" \
    "$DUMP" "$T/ys.h5" 30 last:2 lk:binary:event_type==likes "" event_type
expect_error "'like' is a word and /events/played_ratio_pct" \
    "$DUMP" "$T/ys.h5" 30 last:2 lk:binary:played_ratio_pct==like "" event_type
expect_error "or == and != with the name of a categorical column's value" \
    "$DUMP" "$T/ys.h5" 30 last:2 lk:binary:event_type\>like "" event_type
finish
