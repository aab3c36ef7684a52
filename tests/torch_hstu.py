#!/usr/bin/python3
"""torch_hstu: PyTorch oracle for the HSTU model (src/model/model_hstu.c).

Reads a file written by tests/test_hstu_grad (layout in its header comment),
recomputes the forward pass independently with PyTorch in float64 (padded
[B, Lmax] attention with its own causal mask and bias lookup: always the full
last layer), runs autograd on L = sum(out * dout), and compares out, demb and
every parameter gradient to the C results with a norm-wise relative error
||c - t|| / max(||t||, tiny). A file with reads (model.last_layer = targets)
compares out at those rows alone, after checking that dout is 0 elsewhere.

    torch_hstu.py FILE...      exit 0 pass, 1 fail, 77 torch missing
"""
import math
import struct
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

TIME_BUCKETS = 128
TOL = 1e-4


class Reader:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0

    def take(self, dtype, n):
        a = np.frombuffer(self.buf, dtype=dtype, count=n, offset=self.pos)
        self.pos += a.nbytes
        return a.copy()

    def i32(self):
        return int(self.take(np.int32, 1)[0])


def read(path):
    r = Reader(path)
    if r.buf[:8] != b"HSTUGRAD":
        raise SystemExit(f"{path}: not an HSTUGRAD file")
    r.pos = 8
    f = {}
    if r.i32() != 2:
        raise SystemExit(f"{path}: unknown version")
    for k in ("d", "layers", "heads", "N", "time_bias", "has_ts", "train"):
        f[k] = r.i32()
    f["dropout"] = float(r.take(np.float32, 1)[0])
    B, T = (int(v) for v in r.take(np.int64, 2))
    f["B"], f["T"] = B, T
    d = f["d"]
    f["offsets"] = r.take(np.int64, B + 1)
    f["ts"] = r.take(np.int64, T) if f["has_ts"] else None
    f["emb"] = r.take(np.float32, T * d).reshape(T, d)
    f["dout"] = r.take(np.float32, T * d).reshape(T, d)
    f["reads"] = r.take(np.int64, r.i32())
    f["masks"] = [r.take(np.float32, T * d).reshape(T, d) for _ in range(r.i32())]
    params = []
    for _ in range(r.i32()):
        name = r.buf[r.pos:r.pos + 48].split(b"\0")[0].decode()
        r.pos += 48
        rows, cols = r.i32(), r.i32()
        params.append((name, rows, cols, r.take(np.float32, rows * cols).reshape(rows, cols)))
    f["params"] = params
    f["out"] = r.take(np.float32, T * d).reshape(T, d)
    f["demb"] = r.take(np.float32, T * d).reshape(T, d)
    f["grads"] = {n: r.take(np.float32, rows * cols).reshape(rows, cols)
                  for n, rows, cols, _ in params}
    if r.pos != len(r.buf):
        raise SystemExit(f"{path}: {len(r.buf) - r.pos} trailing bytes")
    return f


def pad(x, offsets, lmax):
    """jagged [T, D] -> padded [B, lmax, D] (zeros after each sequence)"""
    B = len(offsets) - 1
    out = x.new_zeros(B, lmax, x.shape[1])
    for b in range(B):
        s, e = int(offsets[b]), int(offsets[b + 1])
        out[b, : e - s] = x[s:e]
    return out


def unpad(x, offsets):
    return torch.cat([x[b, : int(offsets[b + 1] - offsets[b])] for b in range(len(offsets) - 1)])


def rel_bias(pos_w, ts_w, ts_pad, N, lmax):
    """[B or 1, lmax, lmax]: pos_w[N - 1 + j - i] (+ ts_w[bucket(ts_i - ts_j)])"""
    i = torch.arange(lmax).view(-1, 1)
    j = torch.arange(lmax).view(1, -1)
    bias = pos_w[(N - 1 + j - i).clamp(0, 2 * N - 2)].unsqueeze(0)
    if ts_w is not None:
        dt = (ts_pad.unsqueeze(2) - ts_pad.unsqueeze(1)).abs().clamp(min=1)
        bucket = torch.floor(torch.log(dt.double()) / 0.301).long().clamp(0, TIME_BUCKETS)
        bias = bias + ts_w[bucket]
    return bias


def hstu_forward(f, P, emb):
    d, H, N, p = f["d"], f["heads"], f["N"], f["dropout"]
    dh = d // H
    off = f["offsets"]
    lengths = off[1:] - off[:-1]
    lmax = int(lengths.max())
    pos = torch.cat([torch.arange(int(L)) for L in lengths])
    valid = torch.arange(lmax).view(1, -1) < torch.tensor(lengths).view(-1, 1)  # [B, lmax]
    causal = torch.tril(torch.ones(lmax, lmax, dtype=torch.bool))
    mask = (causal.unsqueeze(0) & valid.unsqueeze(1)).unsqueeze(1)  # [B, 1, lmax, lmax]
    ts_pad = None
    if f["ts"] is not None:
        ts_pad = pad(torch.tensor(f["ts"]).view(-1, 1), off, lmax).squeeze(2)
    masks = [torch.tensor(m, dtype=torch.float64) for m in f["masks"]]

    x = emb * math.sqrt(d) + F.embedding(pos, P["pos_emb"])
    if masks:
        x = x * masks[0] / (1 - p)
    B = f["B"]
    for l in range(f["layers"]):
        n = F.layer_norm(x, (d,), eps=1e-6)
        u, v, q, k = torch.split(F.silu(n @ P[f"l{l}.uvqk"]), [d, d, d, d], dim=1)
        qp = pad(q, off, lmax).view(B, lmax, H, dh)
        kp = pad(k, off, lmax).view(B, lmax, H, dh)
        vp = pad(v, off, lmax).view(B, lmax, H, dh)
        tw = P.get(f"l{l}.time_bias") if f["time_bias"] and ts_pad is not None else None
        s = torch.einsum("bihd,bjhd->bhij", qp, kp)
        s = s + rel_bias(P[f"l{l}.pos_bias"].view(-1), None if tw is None else tw.view(-1),
                         ts_pad, N, lmax).unsqueeze(1)
        attn = torch.where(mask, F.silu(s) / N, torch.zeros_like(s))
        a = unpad(torch.einsum("bhij,bjhd->bihd", attn, vp).reshape(B, lmax, d), off)
        z = u * F.layer_norm(a, (d,), eps=1e-6)
        if masks:
            z = z * masks[1 + l] / (1 - p)
        x = x + F.linear(z, P[f"l{l}.o.w"].t(), P[f"l{l}.o.b"].view(-1))
    return F.normalize(x, p=2.0, dim=1, eps=1e-6)


def relerr(c, t):
    c = torch.as_tensor(c, dtype=torch.float64)
    return float((c - t).norm() / max(float(t.norm()), 1e-12))


def check(path):
    f = read(path)
    print(f"{path}: d {f['d']}, layers {f['layers']}, heads {f['heads']}, N {f['N']}, "
          f"time_bias {f['time_bias']}, dropout {f['dropout']:g} ({len(f['masks'])} masks), "
          f"B {f['B']}, T {f['T']}")
    torch.manual_seed(0)
    P = {n: torch.tensor(w, dtype=torch.float64, requires_grad=True)
         for n, _, _, w in f["params"]}
    emb = torch.tensor(f["emb"], dtype=torch.float64, requires_grad=True)
    out = hstu_forward(f, P, emb)
    dout = torch.tensor(f["dout"], dtype=torch.float64)
    (out * dout).sum().backward()

    reads = f["reads"]
    if len(reads):  # the outputs read; every other row's output gradient must be 0
        other = np.setdiff1d(np.arange(f["T"]), reads)
        if np.any(f["dout"][other] != 0):
            raise SystemExit(f"{path}: dout is not 0 off the read rows")
        print(f"  last_layer targets: out compared at the {len(reads)} read rows of {f['T']}")
        rows = [("out (read rows)", f["out"][reads], out.detach()[torch.tensor(reads)])]
    else:
        rows = [("out", f["out"], out.detach())]
    rows += [("demb", f["demb"], emb.grad)]
    rows += [(f"grad {n}", f["grads"][n], P[n].grad) for n, _, _, _ in f["params"]]
    bad = 0
    for name, c, t in rows:
        e = relerr(c, t)
        ok = e <= TOL
        bad += not ok
        print(f"  {name:22s} rel err {e:.2e} (|torch| {float(t.norm()):.3e})"
              f"{'' if ok else '  FAIL'}")
    return bad


def main():
    if len(sys.argv) < 2:
        raise SystemExit("usage: torch_hstu.py FILE...")
    bad = sum(check(p) for p in sys.argv[1:])
    print("PASS" if bad == 0 else f"FAIL: {bad} tensor(s) differ by more than {TOL:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
