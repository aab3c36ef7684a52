#!/usr/bin/python3
"""torch_tokens: PyTorch oracle for the token assembly with features
(src/model/tokens.c) through HSTU and SASRec.

Reads the records tests/test_tokens_grad writes (oracle_records.py),
rebuilds in float64 from the definitions (tokens.h): item representations
rep = R + pooled item features (times their projection), event tokens
rep[item] + event features, the user features as contextual tokens in front
of each sequence; runs the models of torch_hstu.py / torch_sasrec.py on the
tokens, and autograd on L = sum(out_ev * dout) + sum(rep * drep). Compares
the outputs, the representations, the item rows' gradient, every table's
gradient and every dense parameter's gradient norm-wise (1e-4, as the model
oracles).

    torch_tokens.py FILE      exit 0 pass, 1 fail, 77 torch missing
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import numpy as np
    import torch
    import torch_hstu
    import torch_sasrec
    from oracle_records import read_records
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

TOL = 1e-4
ITEM, EVENT, USER = 0, 1, 2


def case(rec, k):
    g = lambda n: rec[f"c{k}.{n}"]  # noqa: E731
    (mtype, d, layers, heads, N, time_bias, mean, B, T, C, n_items, ntab) = (int(v) for v in g("cfg"))
    spec = g("spec").reshape(-1, 5)
    W, gW = [], []
    for t in range(ntab):
        rows, w = (int(v) for v in g(f"tshape{t}"))
        W.append(torch.tensor(g(f"table{t}").reshape(rows, w), dtype=torch.float64,
                              requires_grad=True))
        gW.append(g(f"gtable{t}").reshape(rows, w))
    R = torch.tensor(g("R").reshape(n_items, d), dtype=torch.float64, requires_grad=True)
    off, items, ts = g("offsets"), g("items"), g("ts")

    def values(i, e):
        """feature i's values of entity e (items: entity = item id - 1)"""
        if i == 0:
            go = g("g_off")
            return list(g("g_val")[go[e]:go[e + 1]])
        if i == 1:
            return [g("year")[e]]
        if i == 2:
            return [g("act")[e]]
        if i == 3:
            return [g("age")[e]]
        oo = g("o_off")
        return list(g("o_val")[oo[e]:oo[e + 1]])

    def feature(i, e):
        role, width, table, proj, ctx = (int(v) for v in spec[i])
        vals = [int(v) for v in values(i, e) if v != 0]
        if not vals:
            return torch.zeros(d, dtype=torch.float64)
        p = W[table][vals].sum(0)
        if mean and len(vals) > 1:
            p = p / len(vals)
        return p @ W[proj][1:] if proj >= 0 else p

    rep = torch.stack([R[e] + sum(feature(i, e) for i in range(len(spec)) if spec[i][0] == ITEM)
                       for e in range(n_items)])
    xs, xoff = [], [0]
    for q in range(B):
        ctx = sorted((int(spec[i][4]), i) for i in range(len(spec)) if spec[i][0] == USER)
        for _, i in ctx:
            xs.append(feature(i, q))
        for t in range(int(off[q]), int(off[q + 1])):
            xs.append(rep[int(items[t]) - 1] +
                      sum(feature(i, t) for i in range(len(spec)) if spec[i][0] == EVENT))
        xoff.append(len(xs))
    x = torch.stack(xs)
    xts = None
    if time_bias:
        xts = []
        for q in range(B):
            xts += [int(ts[off[q]])] * C + [int(v) for v in ts[off[q]:off[q + 1]]]
    # the dense parameters
    P, pg = {}, {}
    names = []
    for i in range(int(g("nparams")[0])):
        name = g(f"pname{i}").astype("<i8").tobytes().split(b"\0")[0].decode()
        rows, cols = (int(v) for v in g(f"pshape{i}"))
        t = torch.tensor(g(f"param{i}").reshape(rows, cols), dtype=torch.float64)
        P[name] = (t.flatten() if rows == 1 else t).requires_grad_(True)
        pg[name] = g(f"pgrad{i}")
        names.append(name)
    if mtype == 0:
        f = dict(d=d, heads=heads, N=N, dropout=0.0, offsets=np.array(xoff), layers=layers,
                 time_bias=time_bias, B=B, masks=[],
                 ts=np.array(xts) if xts is not None else None)
        out_x = torch_hstu.hstu_forward(f, P, x)
    else:
        c = dict(d=d, heads=heads, offsets=xoff, p=0.0, train=0, keys=None, layers=layers, B=B)
        out_x = torch_sasrec.sasrec(c, P, x)
    ev_rows = [xoff[q] + C + j for q in range(B) for j in range(int(off[q + 1] - off[q]))]
    out = out_x[ev_rows]
    L = (out * torch.tensor(g("dout").reshape(T, d), dtype=torch.float64)).sum() + \
        (rep * torch.tensor(g("drep").reshape(n_items, d), dtype=torch.float64)).sum()
    L.backward()
    checks = [("out", g("out"), out), ("rep", g("rep"), rep), ("grad items", g("gR"), R.grad)]
    checks += [(f"grad table {t}", gW[t], W[t].grad) for t in range(ntab)]
    checks += [(f"grad {n}", pg[n], P[n].grad) for n in names]
    print(f"case {k}: {'hstu' if mtype == 0 else 'sasrec'}, {'mean' if mean else 'sum'} pooling, "
          f"{len(xs)} tokens ({B * C} contextual), {ntab} tables")
    bad = 0
    for name, cv, tv in checks:
        tv = tv.detach().double()
        diff = float((torch.tensor(cv, dtype=torch.float64).reshape(tv.shape) - tv).norm())
        # SASRec's key biases: zero gradient in exact arithmetic, compared absolutely
        e = diff if name.endswith(".k.b") else diff / max(float(tv.norm()), 1e-12)
        fail = not e <= TOL
        bad += fail
        print(f"  {name:20s} err {e:.2e} (|torch| {float(tv.norm()):.3e}){'  FAIL' if fail else ''}")
    return bad


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: torch_tokens.py FILE")
    torch.manual_seed(0)
    rec = read_records(sys.argv[1])
    ncase = len({k.split(".")[0] for k in rec})
    bad = sum(case(rec, k) for k in range(ncase))
    print("PASS" if bad == 0 else f"FAIL: {bad} tensor(s) differ by more than {TOL:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
