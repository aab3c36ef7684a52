#!/usr/bin/python3
"""rank_metrics: the ranking metrics recomputed from an evaluation's dump.

freescale train ... debug.rank_dump=PREFIX writes PREFIX-SPLIT.csv (rows
task,user,label,score of every candidate, users in evaluation order); this
program recomputes, in pure Python with NumPy, every metric of the split's
last eval line of the metrics file and compares them (|difference| <= tol):

  AUC      exact, ties counted half (average ranks of the scores)
  GAUC     per-user AUC weighted by the user's labelled candidates, users
           with both classes
  logloss  mean of log(1 + e^z) - y z; NE = logloss / H(positive rate)
  accuracy (z >= 0) == y
  MSE, MAE of the prediction

    rank_metrics.py METRICS.jsonl SPLIT DUMP.csv TASK:binary|TASK:regression ... [--tol T]
exit 0 pass, 1 fail, 77 numpy missing
"""
import json
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)


def ranks(s):
    """average ranks (1-based) of s, ties averaged"""
    order = np.argsort(s, kind="mergesort")
    ss = s[order]
    _, first, count = np.unique(ss, return_index=True, return_counts=True)
    r = np.empty(len(s))
    r[order] = np.repeat(first + (count + 1) / 2.0, count)
    return r


def auc(y, s):
    pos = int(y.sum())
    neg = len(y) - pos
    if pos == 0 or neg == 0:
        return float("nan")
    return (ranks(s)[y == 1].sum() - pos * (pos + 1) / 2.0) / (pos * neg)


def binary(user, y, z):
    out = {"auc": auc(y, z)}
    num = den = 0.0
    for u in dict.fromkeys(user):  # users in dump order
        m = user == u
        a = auc(y[m], z[m])
        if a == a:
            num += m.sum() * a
            den += m.sum()
    out["gauc"] = num / den if den else float("nan")
    ll = float(np.mean(np.logaddexp(0, z) - y * z))
    p = y.mean()
    out["logloss"] = ll
    out["ne"] = ll / -(p * np.log(p) + (1 - p) * np.log(1 - p)) if 0 < p < 1 else float("nan")
    out["accuracy"] = float(np.mean((z >= 0) == (y == 1)))
    return out


def main(argv):
    tol = 1e-9
    if "--tol" in argv:
        i = argv.index("--tol")
        tol = float(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if len(argv) < 4:
        raise SystemExit("usage: rank_metrics.py METRICS.jsonl SPLIT DUMP.csv TASK:KIND ...")
    metrics, split, dump, tasks = argv[0], argv[1], argv[2], argv[3:]
    line = None
    for text in open(metrics):
        rec = json.loads(text)
        if rec.get("event") == "eval" and rec.get("split") == split:
            line = rec
    if line is None:
        raise SystemExit(f"{metrics}: no eval line of split {split}")
    rows = [r.split(",") for r in open(dump).read().splitlines()[1:]]
    bad = 0
    for spec in tasks:
        name, kind = spec.split(":")
        sel = [r for r in rows if r[0] == name]
        user = np.array([int(r[1]) for r in sel])
        y = np.array([float(r[2]) for r in sel])
        s = np.array([float(r[3]) for r in sel])
        if kind == "binary":
            want = binary(user, y, s)
            ties = len(s) - len(np.unique(s))
        else:
            want = {"mse": float(np.mean((s - y) ** 2)), "mae": float(np.mean(np.abs(s - y)))}
            ties = 0
        for key, v in want.items():
            got = line.get(f"{name}.{key}")
            got = float("nan") if got is None else float(got)
            same = (got != got and v != v) or abs(got - v) <= tol
            bad += not same
            print(f"  {split} {name}.{key}: freescale {got:.17g} python {v:.17g} "
                  f"diff {abs(got - v):.2e}{'' if same else '  FAIL'}")
        print(f"  {split} {name}: {len(s)} candidates, {ties} tied scores")
    print("PASS" if bad == 0 else f"FAIL: {bad} metric(s) differ by more than {tol:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
