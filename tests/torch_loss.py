#!/usr/bin/python3
"""torch_loss: PyTorch autograd oracle for the losses of src/model/loss.c.

Reads the cases written by tests/test_loss (argv[1]), recomputes each loss
with PyTorch in float64 (F.normalize, cross-entropy over [s_pos, s_neg]
with masked negatives at -inf; F.binary_cross_entropy_with_logits), takes
the gradient of scale * sum(loss) w.r.t. u and the raw rows by autograd, and
compares the loss, du and drows - drows0 (drows is accumulated) to 1e-4
relative (elementwise, floored at 1% of the largest value). Exit 0 pass, 1 fail, 77 when
PyTorch is not importable.
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

TOL = 1e-4


def torch_loss(kind, T, d, R, nu, normalize, tau, u, rows, pos, neg):
    """sum of per-position losses (float64 tensor) over supervised positions"""
    e = F.normalize(rows, dim=1, eps=1e-6) if normalize else rows
    sup = pos >= 0
    us, p = u[sup], pos[sup]
    if kind == 0:  # sampled softmax
        n = neg.view(T, R)[sup]
        s_pos = (us * e[p]).sum(-1) / tau
        s_neg = torch.einsum("td,trd->tr", us, e[n.clamp(min=0)]) / tau
        masked = (n < 0) | (n == p[:, None])
        s_neg = s_neg.masked_fill(masked, float("-inf"))
        logits = torch.cat([s_pos[:, None], s_neg], dim=1)
        target = torch.zeros(len(p), dtype=torch.long)
        return F.cross_entropy(logits, target, reduction="sum")
    n = neg[sup]
    s_pos = (us * e[p]).sum(-1)
    total = F.binary_cross_entropy_with_logits(s_pos, torch.ones_like(s_pos), reduction="sum")
    has_neg = (n >= 0) & (n != p)
    s_neg = (us[has_neg] * e[n[has_neg]]).sum(-1)
    return total + F.binary_cross_entropy_with_logits(s_neg, torch.zeros_like(s_neg),
                                                      reduction="sum")


def rel_err(got, want):
    """elementwise relative error, with a floor of 1% of the largest value
    (so that one large row, e.g. a short one through the normalisation,
    does not hide errors in the others)"""
    floor = max(0.01 * float(np.max(np.abs(want))), 1e-30)
    return float(np.max(np.abs(got - want) / (np.abs(want) + floor)))


def main():
    recs = read_records(sys.argv[1])
    names = sorted({k.split(".")[0] for k in recs})
    failures = 0
    for c in names:
        r = lambda k: recs[f"{c}.{k}"]
        kind, T, d, R, nu, normalize = (int(x) for x in r("meta"))
        tau, scale = (float(x) for x in r("tau_scale"))
        u = torch.tensor(r("u").astype(np.float64).reshape(T, d), requires_grad=True)
        rows = torch.tensor(r("rows").astype(np.float64).reshape(nu, d), requires_grad=True)
        pos = torch.tensor(r("pos"))
        neg = torch.tensor(r("neg"))
        loss = torch_loss(kind, T, d, R, nu, normalize, tau, u, rows, pos, neg)
        (scale * loss).backward()
        want_du = u.grad.numpy().reshape(-1)
        want_drows = rows.grad.numpy().reshape(-1)
        got_drows = r("drows").astype(np.float64) - r("drows0").astype(np.float64)
        errs = {
            "loss": abs(float(r("loss")[0]) - loss.item()) / abs(loss.item()),
            "du": rel_err(r("du").astype(np.float64), want_du),
            "drows": rel_err(got_drows, want_drows),
        }
        for what, err in errs.items():
            ok = err <= TOL
            failures += not ok
            print(f"{'ok' if ok else 'FAIL'}: {c} {what}: relative error {err:.2e}"
                  + (f" (loss {loss.item():.9g})" if what == "loss" else ""))
    if len(names) != 4:
        print(f"FAIL: expected 4 cases, found {names}")
        failures += 1
    print(f"{failures} check(s) failed" if failures else "all torch loss checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
