#!/usr/bin/python3
"""torch_rank: PyTorch oracle of a ranking step (tests/test_rank_grad.c).

Rebuilds in float64 from the definitions (model/tokens.h, model/task.h):
  actions   a_t = like table[1 + y] (binary label; none if missing)
                  + z_t rating table[1] (z = standardised rating; none if missing)
                  + act table[value] (the event feature; none for 0)
  tokens    per sequence: the contextual token (age table[age]), then each
            history event's item row R[item] (sum: + a_{t-1}; interleave: then
            a_t as a token of its own), then the candidates R[item] (sum: +
            a of the last history event), all at the position after the
            history; every item token (history and candidates) also +
            xr table[value] (a hashed cross, on its own token; none for 0);
  mask      the history causal; a candidate sees the history and itself;
  HSTU      torch_hstu.py's layers with explicit positions, timestamps and
            that mask (each token's rab from its own position and time);
  head      ReLU MLP -> one logit per task (model.bias: + bias.item[item] +
            bias.user[user], the sequence's index its user; model.recency: + r A^T,
            r_j(t) = sum_s l^a (v_j(s) - centre[item_s, j]) / (sum_s l^a + R0) over
            the sequence's earlier events s with a label of task j, a the events
            between them, v the label, a regression label standardised; model.factors:
            + f M^T, f_j(t) = G fac[item_t] . sum_s (u_j(s) - ub_j(t)) fac[item_s]
            / (n_j(t) + R0), u_j(s) = v_j(s) - centre[item_s, j], ub_j(t) = sum_s
            u_j(s) / (n_j(t) + R0), the same events without the decay); loss = sum_k w_k mean over the
            labelled positions of BCE(logit, y) (binary) or (logit - z)^2
            (regression, z = (y - mean) / std)
then autograd of the loss. Compares the outputs, the predictions, the loss,
the item rows' gradient, every table's and every dense parameter's gradient
(norm-wise relative, 1e-4).

    torch_rank.py FILE      exit 0 pass, 1 fail, 77 torch missing
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from oracle_records import read_records
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

TOL = 1e-4
TIME_BUCKETS = 128
ACT, AGE, LIKE, RATING, XR = 0, 1, 2, 3, 4


def bucket(dt):
    dt = max(abs(int(dt)), 1)
    return min(int(math.floor(math.log(dt) / 0.301)), TIME_BUCKETS)


def hstu(P, x, seqs, d, H, N, layers):
    """x [n, d]; seqs: per sequence (rows, pos, ts, mask [L, L] bool)"""
    dh = d // H
    pos = torch.zeros(x.shape[0], dtype=torch.long)
    for rows, p, _, _ in seqs:
        pos[rows] = torch.tensor(p)
    x = x * math.sqrt(d) + F.embedding(pos, P["pos_emb"])
    for l in range(layers):
        n = F.layer_norm(x, (d,), eps=1e-6)
        u, v, q, k = torch.split(F.silu(n @ P[f"l{l}.uvqk"]), [d, d, d, d], dim=1)
        a = torch.zeros_like(x)
        pw, tw = P[f"l{l}.pos_bias"].view(-1), P[f"l{l}.time_bias"].view(-1)
        for rows, p, t, mask in seqs:
            L = len(rows)
            rab = torch.stack([torch.stack([pw[N - 1 + p[j] - p[i]] + tw[bucket(t[i] - t[j])]
                                            for j in range(L)]) for i in range(L)])
            for h in range(H):
                sl = slice(h * dh, (h + 1) * dh)
                s = q[rows, sl] @ k[rows, sl].T + rab
                w = torch.where(torch.tensor(mask), F.silu(s) / N, torch.zeros_like(s))
                a[rows, sl] = w @ v[rows, sl]
        z = u * F.layer_norm(a, (d,), eps=1e-6)
        x = x + F.linear(z, P[f"l{l}.o.w"].t(), P[f"l{l}.o.b"].view(-1))
    return F.normalize(x, p=2.0, dim=1, eps=1e-6)


def case(rec, c):
    g = lambda n: rec[f"c{c}.{n}"]  # noqa: E731
    inter, d, layers, H, N, B, T, K, n_items, nfeat = (int(v) for v in g("cfg"))
    off, ncand, items, ts = g("offsets"), g("ncand"), g("items"), g("ts")
    act, age, lab = g("act"), g("age"), g("labels").reshape(T, K).astype(np.float64)
    xr = g("xr")
    cross = lambda t: W[XR][int(xr[t])] if xr[t] else 0  # noqa: E731
    w_like, w_rating, mean, std = (float(v) for v in g("task"))
    W = [torch.tensor(g(f"table{t}"), dtype=torch.float64).reshape(-1, d).requires_grad_(True)
         for t in range(nfeat)]
    R = torch.tensor(g("R").reshape(n_items, d), dtype=torch.float64, requires_grad=True)
    P, pg, names = {}, {}, []
    for i in range(int(g("nparams")[0])):
        name = g(f"pname{i}").astype("<i8").tobytes().split(b"\0")[0].decode()
        rows, cols = (int(v) for v in g(f"pshape{i}"))
        t = torch.tensor(g(f"param{i}").reshape(rows, cols), dtype=torch.float64)
        P[name] = (t.flatten() if rows == 1 else t).requires_grad_(True)
        pg[name] = g(f"pgrad{i}")
        names.append(name)

    def action(t):
        a = torch.zeros(d, dtype=torch.float64)
        if not math.isnan(lab[t, 0]):
            a = a + W[LIKE][1 + int(lab[t, 0] != 0)]
        if not math.isnan(lab[t, 1]):
            a = a + (float(np.float32((np.float32(lab[t, 1]) - np.float32(mean)) /
                                      np.float32(std)))) * W[RATING][1]
        if act[t] != 0:
            a = a + W[ACT][int(act[t])]
        return a

    xs, item_row, seqs = [], {}, []
    for q in range(B):
        t0, t1 = int(off[q]), int(off[q + 1])
        Hn = t1 - t0 - int(ncand[q])
        rows, pos, tt = [], [], []

        def tok(v, p, when):
            rows.append(len(xs))
            xs.append(v)
            pos.append(p)
            tt.append(when)
            return rows[-1]

        tok(W[AGE][int(age[q])] if age[q] else torch.zeros(d, dtype=torch.float64), 0, ts[t0])
        for j in range(Hn):
            t = t0 + j
            v = R[int(items[t]) - 1] + (action(t - 1) if not inter and j > 0 else 0) + cross(t)
            item_row[t] = tok(v, len(pos), ts[t])
            if inter:
                tok(action(t), len(pos), ts[t])
        hx = len(rows)
        mask = np.tril(np.ones((hx + int(ncand[q]),) * 2, dtype=bool))
        for j in range(Hn, t1 - t0):
            t = t0 + j
            v = (R[int(items[t]) - 1] + (action(t0 + Hn - 1) if not inter and Hn > 0 else 0) +
                 cross(t))
            item_row[t] = tok(v, hx, ts[t])
            mask[len(rows) - 1, hx:len(rows) - 1] = False  # not the other candidates
        seqs.append((rows, pos, tt, mask))
    x = torch.stack(xs)
    out_x = hstu(P, x, seqs, d, H, N, layers)
    out = out_x[[item_row[t] for t in range(T)]]
    # the head
    h, nl = out, sum(1 for n in names if n.startswith("head.w"))
    for l in range(nl):
        h = h @ P[f"head.w{l}"] + P[f"head.b{l}"]
        if l + 1 < nl:
            h = F.relu(h)
    if "bias.item" in P:
        tok_user = np.repeat(np.arange(B), np.diff(off).astype(np.int64))
        h = h + P["bias.item"][torch.tensor(items.astype(np.int64))] \
            + P["bias.user"][torch.tensor(tok_user)]
    if "bias.recency" in P:
        lam, r0 = (float(v) for v in g("recency"))
        cen = g("centre").reshape(-1, K).astype(np.float64)
        r = np.zeros((T, K))
        for q in range(B):
            num, den = np.zeros(K), np.zeros(K)
            for t in range(int(off[q]), int(off[q + 1])):
                r[t] = num / (den + r0)
                num, den = num * lam, den * lam
                for j in range(K):
                    if math.isnan(lab[t, j]):
                        continue
                    v = lab[t, j] if j == 0 else float(
                        (np.float32(lab[t, j]) - np.float32(mean)) / np.float32(std))
                    num[j] += v - cen[int(items[t]), j]
                    den[j] += 1
        h = h + torch.tensor(r) @ P["bias.recency"].reshape(K, K).t()
    if "bias.factor" in P:
        gain, r0, ridge = (float(v) for v in g("factors"))
        cen = g("centre").reshape(-1, K).astype(np.float64)
        fac = P["bias.factor"]
        fvalue = f"c{c}.fvalue" in rec
        terms = []
        for q in range(B):
            s = [torch.zeros(fac.shape[1], dtype=torch.float64) for _ in range(K)]
            sf = [torch.zeros(fac.shape[1], dtype=torch.float64) for _ in range(K)]
            sv, n = [0.0] * K, [0.0] * K
            nf = fac.shape[1]
            A = [ridge * torch.eye(nf, dtype=torch.float64) for _ in range(K)]
            for t in range(int(off[q]), int(off[q + 1])):
                # model.factor_feature: the rows are the item's value's
                ft = fac[int(g("fvalue")[int(items[t])]) if fvalue else int(items[t])]
                if ridge > 0:  # model.factor_ridge: z = A^-1 b by autograd through the solve
                    terms.append(torch.stack([gain * (ft * torch.linalg.solve(
                        A[j], s[j] - sv[j] / (n[j] + r0) * sf[j])).sum() for j in range(K)]))
                else:
                    terms.append(torch.stack([gain * (ft * (s[j] - sv[j] / (n[j] + r0) * sf[j]))
                                              .sum() / (n[j] + r0) for j in range(K)]))
                for j in range(K):
                    if math.isnan(lab[t, j]):
                        continue
                    v = lab[t, j] if j == 0 else float(
                        (np.float32(lab[t, j]) - np.float32(mean)) / np.float32(std))
                    v -= cen[int(items[t]), j]
                    s[j] = s[j] + v * ft
                    sf[j] = sf[j] + ft
                    A[j] = A[j] + torch.outer(ft, ft)
                    sv[j] += v
                    n[j] += 1
        h = h + torch.stack(terms) @ P["bias.fmix"].reshape(K, K).t()
    loss = 0
    y = torch.tensor(lab)
    m0 = ~torch.isnan(y[:, 0])
    loss = loss + w_like * (F.softplus(h[m0, 0]) - y[m0, 0] * h[m0, 0]).mean()
    m1 = ~torch.isnan(y[:, 1])
    zt = (y[m1, 1].float() - np.float32(mean)) / np.float32(std)
    loss = loss + w_rating * ((h[m1, 1] - zt.double()) ** 2).mean()
    loss.backward()
    pred = torch.stack([h[:, 0], mean + std * h[:, 1]], 1)
    checks = [("out", g("out"), out), ("pred", g("pred"), pred),
              ("loss", g("loss"), loss.reshape(1)), ("grad items", g("gR"), R.grad)]
    checks += [(f"grad table {t}", g(f"gtable{t}"), W[t].grad) for t in range(nfeat)]
    checks += [(f"grad {n}", pg[n], P[n].grad if P[n].grad is not None else torch.zeros_like(P[n]))
               for n in names]
    print(f"case {c}: hstu, actions {'interleave' if inter else 'sum'}"
          f"{', model.bias' if 'bias.item' in P else ''}"
          f"{', model.recency' if 'bias.recency' in P else ''}"
          f"{', model.factors' if 'bias.factor' in P else ''}"
          f"{', model.factor_feature' if f'c{c}.fvalue' in rec else ''}, {len(xs)} tokens, "
          f"{int(ncand.sum())} candidates, loss {float(loss):.6f}")
    bad = 0
    for name, cv, tv in checks:
        tv = tv.detach().double()
        diff = float((torch.tensor(cv, dtype=torch.float64).reshape(tv.shape) - tv).norm())
        e = diff / max(float(tv.norm()), 1e-12) if float(tv.norm()) > 1e-9 else diff
        fail = not e <= TOL
        bad += fail
        print(f"  {name:20s} err {e:.2e} (|torch| {float(tv.norm()):.3e}){'  FAIL' if fail else ''}")
    return bad


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: torch_rank.py FILE")
    torch.manual_seed(0)
    rec = read_records(sys.argv[1])
    ncase = len({k.split(".")[0] for k in rec})
    bad = sum(case(rec, k) for k in range(ncase))
    print("PASS" if bad == 0 else f"FAIL: {bad} tensor(s) differ by more than {TOL:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
