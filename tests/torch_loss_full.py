#!/usr/bin/python3
"""torch_loss_full: PyTorch autograd oracle for the full softmax over the
sharded table (src/model/loss_full.c).

Reads the cases written by tests/test_loss_full (argv[1..]: one file per
rank count), recomputes each with PyTorch in float64 as ONE cross-entropy
over the whole table (F.normalize of the rows for HSTU, logits u @ e.T /
tau, F.cross_entropy against target - 1, unsupervised positions left out),
takes the gradients of scale * loss w.r.t. u and the raw rows by autograd,
and compares: the loss to 1e-5 relative, du and drows to 1e-5 in relative
norm (|got - want| / |want|) and to 1e-4 elementwise (relative, floored at
1% of the largest value: the float32 logits carry ~1e-6 relative error,
which the cancellations of p - [target] amplify in the smallest elements).
Exit 0 pass, 1 fail, 77 when PyTorch is not importable.
"""
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"skip: {e}")
    sys.exit(77)
from oracle_records import read_records  # noqa: E402 (numpy checked above)

TOL = 1e-5
TOL_ELEMENT = 1e-4


def norm_err(got, want):
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def rel_err(got, want):
    floor = max(0.01 * float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got - want) / (np.abs(want) + floor)))


def check(path):
    recs = read_records(path)
    failures = 0
    names = sorted({k.split(".")[0] for k in recs})
    for c in names:
        r = lambda k: recs[f"{c}.{k}"]
        N, I, d, normalize = (int(x) for x in r("meta"))
        tau, scale, got_loss = (float(x) for x in r("tau_scale_loss"))
        u = torch.tensor(r("u").astype(np.float64).reshape(N, d), requires_grad=True)
        rows = torch.tensor(r("rows").astype(np.float64).reshape(I + 1, d), requires_grad=True)
        tgt = torch.tensor(r("targets"))
        e = F.normalize(rows[1:], dim=1, eps=1e-6) if normalize else rows[1:]
        sup = tgt >= 1
        logits = u[sup] @ e.T / tau
        loss = F.cross_entropy(logits, tgt[sup] - 1, reduction="sum")
        (scale * loss).backward()
        gdu, wdu = r("du").astype(np.float64), u.grad.numpy().reshape(-1)
        gdr, wdr = r("drows").astype(np.float64), rows.grad.numpy().reshape(-1)
        errs = {
            "loss": (abs(got_loss - loss.item()) / abs(loss.item()), TOL),
            "du (norm)": (norm_err(gdu, wdu), TOL),
            "drows (norm)": (norm_err(gdr, wdr), TOL),
            "du (elementwise)": (rel_err(gdu, wdu), TOL_ELEMENT),
            "drows (elementwise)": (rel_err(gdr, wdr), TOL_ELEMENT),
        }
        for what, (err, tol) in errs.items():
            ok = err <= tol
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'}: {path}: {c} {what}: relative error {err:.2e}"
                  + (f" (loss {loss.item():.9g})" if what == "loss" else ""))
    if len(names) != 3:
        print(f"FAIL: {path}: expected 3 cases, found {names}")
        failures += 1
    return failures


def main():
    failures = sum(check(p) for p in sys.argv[1:])
    print(f"{failures} check(s) failed" if failures else "all torch full-softmax checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
