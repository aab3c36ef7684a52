#!/usr/bin/python3
"""torch_sasrec.py: PyTorch autograd oracle for the SASRec model (model_sasrec.c).

Reads the cases written by tests/test_sasrec_grad (format in its
write_case), recomputes the forward in float64 with PyTorch's own ops
(F.layer_norm, F.linear, and F.multi_head_attention_forward with a boolean
causal mask, i.e. what nn.MultiheadAttention in pmixer's SASRec port does),
runs autograd with the same dout and compares out, demb and every parameter
gradient norm-wise per tensor: |c - t| / |t| < 1e-4. Dropout masks are
rebuilt from the same keyed generator as the CPU backend (rng.h: splitmix64
+ xoshiro256**, key (row_key, site, "drop")).

Usage: torch_sasrec.py FILE. Exit 0: all match; 1: mismatch; 77: no torch.
"""
import struct
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError:
    print("torch_sasrec.py: torch or numpy not importable: skip")
    sys.exit(77)

TOL = 1e-4
M64 = (1 << 64) - 1
LN_EPS = 1e-8


# --- rng.h, for the dropout masks ------------------------------------------
def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


def rng_key(a, b, c):
    x, h = splitmix(a)
    x ^= (b * 0xD6E8FEB86659FD93) & M64
    x, z = splitmix(x)
    h ^= z
    x ^= (c * 0xA0761D6478BD642F) & M64
    x, z = splitmix(x)
    return h ^ z


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


def uniforms(key, n):
    s, x = [], key
    for _ in range(4):
        x, z = splitmix(x)
        s.append(z)
    out = []
    for _ in range(n):
        r = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        out.append((r >> 11) * 2.0**-53)
    return out


def dropout_mask(keys, site, d, p):
    """[T, d] float64 multiplier: keep / (1 - p) or 0."""
    m = [[1.0 if u >= p else 0.0 for u in uniforms(rng_key(int(k), site, 0x64726F70), d)]
         for k in keys]
    return torch.tensor(m, dtype=torch.float64) / (1.0 - p)


# --- reading ----------------------------------------------------------------
class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, dtype, count):
        a = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += a.nbytes
        return a.copy()

    def i32(self, n=1):
        return [int(v) for v in self.take("<i4", n)]


def read_case(r):
    d, layers, heads, max_len, train, B, T, nparams = r.i32(8)
    c = dict(d=d, layers=layers, heads=heads, N=max_len, train=train, B=B, T=T)
    c["p"] = float(r.take("<f4", 1)[0])
    c["offsets"] = [int(v) for v in r.take("<i8", B + 1)]
    c["keys"] = r.take("<u8", T)
    c["emb"] = r.take("<f4", T * d).reshape(T, d)
    c["dout"] = r.take("<f4", T * d).reshape(T, d)
    params, order = {}, []
    for _ in range(nparams):
        name = r.take("S48", 1)[0].split(b"\0")[0].decode()
        rows, cols = r.i32(2)
        params[name] = r.take("<f4", rows * cols).reshape(rows, cols)
        order.append(name)
    c["params"], c["order"] = params, order
    c["out"] = r.take("<f4", T * d).reshape(T, d)
    c["demb"] = r.take("<f4", T * d).reshape(T, d)
    c["grads"] = {name: r.take("<f4", params[name].size).reshape(params[name].shape)
                  for name in order}
    return c


# --- the model, from its equations ------------------------------------------
def sasrec(c, P, emb):
    """P: name -> float64 tensor (vectors flattened); emb: [T, d]. Returns [T, d]."""
    d, H, offs, p = c["d"], c["heads"], c["offsets"], c["p"]
    drop = c["train"] and p > 0
    pos = torch.cat([torch.arange(offs[i + 1] - offs[i]) for i in range(c["B"])])
    x = emb * d**0.5 + P["pos_emb"][pos]
    if drop:
        x = x * dropout_mask(c["keys"], 0, d, p)
    causal = {}
    for l in range(c["layers"]):
        w = lambda n: P[f"l{l}.{n}"]  # noqa: E731
        q_in = F.layer_norm(x, (d,), w("attn_ln.g"), w("attn_ln.b"), LN_EPS)
        parts = []
        for b in range(c["B"]):
            s, e = offs[b], offs[b + 1]
            L = e - s
            if L not in causal:
                causal[L] = ~torch.tril(torch.ones(L, L, dtype=torch.bool))
            # (L, batch 1, d); weights are stored [in, out], torch wants [out, in]
            a, _ = F.multi_head_attention_forward(
                q_in[s:e].unsqueeze(1), x[s:e].unsqueeze(1), x[s:e].unsqueeze(1), d, H,
                None, torch.cat([w("q.b"), w("k.b"), w("v.b")]), None, None, False, 0.0,
                w("out.w").t(), w("out.b"), training=False, need_weights=False,
                attn_mask=causal[L], use_separate_proj_weight=True,
                q_proj_weight=w("q.w").t(), k_proj_weight=w("k.w").t(),
                v_proj_weight=w("v.w").t())
            parts.append(a.squeeze(1))
        x = q_in + torch.cat(parts)
        f_in = F.layer_norm(x, (d,), w("ffn_ln.g"), w("ffn_ln.b"), LN_EPS)
        h = F.linear(f_in, w("ffn1.w").t(), w("ffn1.b"))
        if drop:
            h = h * dropout_mask(c["keys"], 1 + 3 * l, d, p)
        h = F.linear(torch.relu(h), w("ffn2.w").t(), w("ffn2.b"))
        if drop:
            h = h * dropout_mask(c["keys"], 2 + 3 * l, d, p)
        x = f_in + h
    return F.layer_norm(x, (d,), P["final_ln.g"], P["final_ln.b"], LN_EPS)


def expected_names(layers):
    names = ["pos_emb"]
    for l in range(layers):
        for n in ["attn_ln.g", "attn_ln.b", "q.w", "q.b", "k.w", "k.b", "v.w", "v.b",
                  "out.w", "out.b", "ffn_ln.g", "ffn_ln.b", "ffn1.w", "ffn1.b",
                  "ffn2.w", "ffn2.b"]:
            names.append(f"l{l}.{n}")
    return names + ["final_ln.g", "final_ln.b"]


def rel(c_val, t_val):
    t = t_val.detach().double()
    diff = (torch.as_tensor(c_val, dtype=torch.float64).reshape(t.shape) - t).norm().item()
    return diff / max(t.norm().item(), 1e-6), t.norm().item()


def check_case(k, c):
    print(f"case {k}: d={c['d']} layers={c['layers']} heads={c['heads']} N={c['N']} "
          f"train={c['train']} p={c['p']:.2f} lengths="
          f"{[c['offsets'][i + 1] - c['offsets'][i] for i in range(c['B'])]}")
    fails = 0
    if c["order"] != expected_names(c["layers"]):
        print(f"  FAIL: parameter names/order {c['order']}")
        fails += 1
    P = {}
    for name, v in c["params"].items():
        t = torch.tensor(v, dtype=torch.float64)
        P[name] = (t.flatten() if t.shape[0] == 1 else t).requires_grad_(True)
    emb = torch.tensor(c["emb"], dtype=torch.float64, requires_grad=True)
    out = sasrec(c, P, emb)
    out.backward(torch.tensor(c["dout"], dtype=torch.float64))
    worst = 0.0
    items = [("out", c["out"], out), ("demb", c["demb"], emb.grad)]
    items += [(n, c["grads"][n], P[n].grad) for n in c["order"]]
    for name, cv, tv in items:
        e, norm = rel(cv, tv)
        # the key biases' gradient is zero in exact arithmetic (softmax shift
        # invariance): compare those absolutely
        kind = "rel"
        if name.endswith(".k.b"):
            e, kind = e * max(norm, 1e-6), "abs"
        bad = not e < TOL
        fails += bad
        worst = max(worst, e)
        print(f"  {name:14s} {kind} {e:.2e}  |torch| {norm:.3e}{'  FAIL' if bad else ''}")
    print(f"  worst {worst:.2e}")
    return fails


def main():
    if len(sys.argv) != 2:
        print("usage: torch_sasrec.py FILE")
        return 1
    torch.manual_seed(0)
    with open(sys.argv[1], "rb") as f:
        r = Reader(f.read())
    if r.take("S4", 1)[0] != b"SASG":
        print("bad magic")
        return 1
    (ncases,) = r.i32()
    fails = sum(check_case(k, read_case(r)) for k in range(ncases))
    if r.pos != len(r.data):
        print(f"FAIL: {len(r.data) - r.pos} trailing bytes")
        fails += 1
    print(f"{'FAIL' if fails else 'ok'}: {fails} mismatch(es) over {ncases} cases")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
