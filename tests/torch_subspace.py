#!/usr/bin/python3
"""torch_subspace: PyTorch autograd oracle for subspace-factorised tables
(src/embedding/emb_subspace.c).

Reads the case tests/test_emb_subspace wrote (argv[1]): U [d, k], F
[rows + 1, d], c [rows + 1, k] (the initial stored part), the tokens' ids,
a [n, d] and grad_c [rows + 1, k], the gradient of c that the exchange's
backward applied (U^T g summed per id). Rebuilds E = F[ids] + c[ids] U^T in
float64, L = sum(a * sin(E)), takes dL/dc by autograd and compares it with
grad_c to 1e-4 relative (elementwise, floored at 1% of the largest). Exit 0
pass, 1 fail, 77 when PyTorch is not importable.
"""
import struct
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"skip: {e}")
    sys.exit(77)

TOL = 1e-4


def read_records(path):
    """name -> numpy array, from the record format of tests/test_emb_subspace.c"""
    out = {}
    with open(path, "rb") as f:
        while True:
            name = f.read(16)
            if not name:
                break
            kind = f.read(1)
            (nd,) = struct.unpack("<q", f.read(8))
            dims = struct.unpack(f"<{nd}q", f.read(8 * nd))
            dt = np.int64 if kind == b"q" else np.float32
            n = int(np.prod(dims))
            data = np.frombuffer(f.read(n * np.dtype(dt).itemsize), dtype=dt)
            out[name.rstrip(b"\0").decode()] = data.reshape(dims)
    return out


def main():
    r = read_records(sys.argv[1])
    U = torch.tensor(r["U"], dtype=torch.float64)
    F = torch.tensor(r["F"], dtype=torch.float64)
    c = torch.tensor(r["c"], dtype=torch.float64, requires_grad=True)
    ids = torch.tensor(r["ids"])
    a = torch.tensor(r["a"], dtype=torch.float64)
    E = F[ids] + c[ids] @ U.T
    L = (a * torch.sin(E)).sum()
    L.backward()
    want = c.grad.numpy()
    got = r["grad_c"].astype(np.float64)
    floor = 0.01 * np.abs(want).max()
    rel = np.abs(got - want) / np.maximum(np.abs(want), floor)
    worst = rel.max()
    if worst > TOL:
        i = np.unravel_index(rel.argmax(), rel.shape)
        print(f"FAIL: dL/dc{list(i)} = {got[i]:.9g}, autograd {want[i]:.9g} ({worst:.3g} relative)")
        return 1
    print(f"ok: dL/dc against PyTorch autograd, worst {worst:.3g} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
