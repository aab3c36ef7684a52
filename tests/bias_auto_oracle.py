"""bias_auto_oracle: model.bias_prior = auto and model.recency = auto
(train/step_bias_search.c) recomputed with NumPy from the dataset: the
smoothed user+item means at each pair of priors (the item rows', the user
rows'), the history terms' Newton fit at each half-life, each fit's
validation loss (like's NE: train.select's task), the grid searches at
half-life 16 (both rows' prior 0.5 .. 128, then the item rows', then the
user rows'), then the half-life 1 .. 256 at the chosen priors, and the
chosen fit's rows against a checkpoint written after one step at a
learning rate of 1e-12.

usage: bias_auto_oracle.py DATA.h5 CKPT.h5 TRAIN.LOG  (split last:20%,
tasks like = rating >= 4 and the rating, both auto)."""
import re
import sys

import h5py
import numpy as np

ds, ck = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
log = open(sys.argv[3]).read()
off, items = ds["offsets"][:], ds["item_ids"][:]
y = ds["events/rating"][:].astype(np.float64)
U, N, R0 = len(off) - 1, int(items.max()), 3.0
train, val = np.zeros(len(items), bool), np.zeros(len(items), bool)
for u in range(U):  # last:20%: floor(20%), at least 1, test and as many validate
    L = off[u + 1] - off[u]
    k = max(int(L * 0.2), 1)
    train[off[u]:off[u + 1] - 2 * k] = True
    val[off[u + 1] - 2 * k:off[u + 1] - k] = True
user = np.repeat(np.arange(U), np.diff(off))
z = y[train]
lab = np.stack([(y >= 4).astype(np.float64),
                ((y.astype(np.float32) - np.float32(z.mean())) / np.float32(z.std())).astype(np.float64)], 1)
BIN = (True, False)
s = lambda p: np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))


def means(pi, pu):
    item0, user0, cen = np.zeros((N + 1, 2)), np.zeros((U, 2)), np.zeros((N + 1, 2))
    for k in range(2):
        v, it, us = lab[train, k], items[train], user[train]
        mu = v.mean()
        ni = np.bincount(it, minlength=N + 1)
        bi = (np.bincount(it, v, minlength=N + 1) - ni * mu) / (ni + pi)
        nu = np.bincount(us, minlength=U)
        bu = np.bincount(us, v - mu - bi[it], minlength=U) / (nu + pu)
        mu_i = np.bincount(us, bi[it], minlength=U) / np.maximum(nu, 1)
        item0[:, k] = s(mu + bi) if BIN[k] else mu + bi
        user0[:, k] = s(mu + mu_i + bu) - s(mu + mu_i) if BIN[k] else bu
        cen[:, k] = mu + bi
    return item0, user0, cen


def terms(cen, H):
    """each event's history terms over the user's earlier training events
    (a validation event: all of them)"""
    lam, r = 2 ** (-1 / H), np.zeros((len(items), 2))
    for u in range(U):
        num, den = np.zeros(2), np.zeros(2)
        for e in range(off[u], off[u + 1]):
            r[e] = num / (den + R0)
            if train[e]:
                num, den = num * lam + lab[e] - cen[items[e]], den * lam + 1
    return r


def fit(pi, pu, H):
    item0, user0, cen = means(pi, pu)
    A, scale, r = np.zeros((2, 2)), np.ones(2), None
    if H > 0:
        r = terms(cen, H)
        for k in range(2):
            X = np.concatenate([user0[user[train], k:k + 1], r[train]], 1)
            o, t, th = item0[items[train], k], lab[train, k], np.array([1.0, 0, 0])
            for _ in range(8):
                eta = o + X @ th
                p = 1 / (1 + np.exp(-eta)) if BIN[k] else eta
                w = p * (1 - p) if BIN[k] else np.ones_like(eta)
                th = th + np.linalg.solve((X * w[:, None]).T @ X, X.T @ (t - p))
            scale[k], A[k] = th[0], th[1:]
    us = user0 * scale
    eta = item0[items[val], 0] + us[user[val], 0] + (r[val] @ A[0] if H > 0 else 0)
    t = lab[val, 0]  # like (binary): NE
    m = t.mean()
    loss = (np.logaddexp(0, eta) - t * eta).mean() / -(m * np.log(m) + (1 - m) * np.log(1 - m))
    return item0, us, A, loss


def logged(name):
    got = re.search(name + r" = auto: .* by value[^:]*: (.*); chosen (\S+)", log)
    assert got, f"no log line of {name} = auto"
    return [p.split() for p in got.group(1).split(", ")], got.group(2)


def check(name, tried, chosen):
    """tried: (label, NumPy's loss) in the search's order"""
    lines, choice = logged(name)
    assert [a for a, _ in lines] == [a for a, _ in tried], (lines, tried)
    worst = max(abs(float(b) - c) for (_, b), (_, c) in zip(lines, tried))
    assert worst <= 1e-4, f"{name}: losses {lines} against NumPy's {tried}"
    assert choice == chosen, f"{name}: chose {choice}, NumPy {chosen}"
    return worst


# the priors: both rows' on the grid, then the item rows', then the user rows'
# (a strictly lower loss moves the choice; the value held skipped)
grid, tried = [0.5 * 2 ** i for i in range(9)], []
for v in grid:
    tried.append((f"{v:g}", fit(v, v, 16)[3]))
best = min(range(9), key=lambda i: (tried[i][1], i))
pr, low = [grid[best]] * 2, tried[best][1]
for c in range(2):
    at = pr[c]
    for v in grid:
        if v == at:
            continue
        q = list(pr)
        q[c] = v
        loss = fit(q[0], q[1], 16)[3]
        tried.append((f"{q[0]:g},{q[1]:g}", loss))
        if loss < low:
            low, pr[c] = loss, v
w1 = check("model.bias_prior", tried, f"{pr[0]:g},{pr[1]:g}")
tried = [(f"{v:g}", fit(pr[0], pr[1], v)[3]) for v in [2.0 ** i for i in range(9)]]
H = 2.0 ** min(range(9), key=lambda i: (tried[i][1], i))
w2 = check("model.recency", tried, f"{H:g}")
item0, us, A, _ = fit(pr[0], pr[1], H)
A_w = ck["dense/bias.recency"][:].reshape(2, 2)
bu_w = ck["dense/bias.user"][:].reshape(U, 2)
bi_w = ck["dense/bias.item"][:].reshape(N + 1, 2)
worst = max(np.abs(A_w - A).max(), np.abs(bu_w - us).max(), np.abs(bi_w - item0).max())
assert worst <= 1e-4, f"the chosen fit's rows: worst {worst:.2e}"
print(f"model.bias_prior = auto ({pr[0]:g},{pr[1]:g}) and model.recency = auto ({H:g}) = NumPy's grid "
      f"search (losses within {max(w1, w2):.1e}, rows {worst:.1e})")
