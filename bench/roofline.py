#!/usr/bin/env python3
"""roofline: the roofline of one rank's training step (bench/roofline.sh,
doc/benchmarks.md "The roofline"), from a run's metrics, the rates measured
beside it and the run's CPU profiles.

    roofline.py --shapes METRICS.jsonl
        the rates the table needs, as bench/bench_roofline's arguments
    roofline.py --metrics METRICS.jsonl --rates RATES.txt [--src TOP]
                [--label NAME] PROFILE.txt [PROFILE.txt ...]

METRICS.jsonl: the run's output.metrics (its params line and >= 2 progress
lines; the first, the start-up, left out of the medians). RATES.txt: the
output of bench/bench_roofline with the arguments --shapes printed (one
core: "triad BYTES GB/s", "gemm TA,TB,M,N,K GFLOP/s"). PROFILE.txt: one
rank's `perf script -F time,period,ip,sym,dso` of the whole run recorded
with `perf record --call-graph dwarf` (cpu-clock samples); TOP: the source
tree whose function names attribute the samples to kernel classes (default:
this script's tree).

Counting (per rank and step; T tokens, S causal pairs, B sequences, d, H
heads, layers, R negatives, U unique rows, all from the metrics): each
backend call of the model's forward and backward (src/model/model_hstu.c,
model_sasrec.c) is listed with its FLOPs and the bytes of its operands, each
read or written once (fp32; masks 1 byte, ids 8); a GEMM call's bound is
max(FLOPs / the sgemm rate at its shape, bytes / bandwidth), attention's its
pairs' FLOPs (the FLOP model's per-pair term) at the sgemm rate of a
[Lr, dh] x [dh, Lr] tile (Lr = sqrt(2 S / B)), the sampled softmax's at the
rate of [T, d] x [d, R + 1] (negatives shared in blocks), every other call
bytes / bandwidth (the triad's, over arrays larger than the caches). The
measured time of a class is the CPU time of the samples whose call chain
reaches a function of its source files first (from the leaf; ms per step
and rank: the samples' periods / steps, over the ranks' profiles), of the
samples between the first and the last inside a step (the start-up
left out); the phases' CPU time by the phase functions on the chains
(a chain perf cut short: read_profile).
"""
import argparse
import bisect
import json
import math
import os
import re
import sys

ELEM, EMB, DENSE = "element-wise", "embedding", "dense optimizer"
KERNEL = "kernel (page faults)"
CLASSES = ["projections (GEMM)", "attention", "loss", ELEM, EMB, DENSE, "MPI", KERNEL, "other"]

# kernel class of each source file's functions (symbols not defined here:
# by their shared object below, else "other")
FILES = {
    "attention": ["src/backend/backend_cpu_hstu.c", "src/backend/backend_cpu_sasrec.c"],
    "loss": ["src/backend/backend_cpu_loss.c", "src/backend/backend_cpu_full.c",
             "src/model/loss.c", "src/model/loss_full.c"],
    ELEM: ["src/backend/backend_cpu.c", "src/backend/cpu_math.c"],
    EMB: ["src/backend/backend_cpu_emb.c", "src/backend/backend_cpu_dyn.c",
          "src/backend/emb_optim.c", "src/embedding/*.c"],
    DENSE: ["src/train/dense_optim.c", "src/train/dense_sync.c"],
    "MPI": ["src/comm/*.c"],
    # the model's own code: its GEMMs' callers (a GEMM below them is a
    # projection's), else glue ("other")
    "model": ["src/model/model*.c", "src/model/tokens*.c", "src/model/task*.c"],
}
# functions of backend_cpu.c that are not element-wise passes (None: the
# caller's: the GEMM wrapper)
NAMES = {"cpu_gemm": None, "cpu_alloc": None, "cpu_free": None, "cpu_gather_rows": EMB, "cpu_scatter_add_rows": EMB,
         "cpu_sample_negatives": EMB, "cpu_count_range": EMB, "cpu_index_mask": EMB,
         "cpu_emb_encode": EMB, "cpu_emb_decode": EMB, "cpu_adamw_step": DENSE,
         "cpu_sum_squares": DENSE, "cpu_sumsq_acc": DENSE}
LIBC_ELEM = ("memset", "memmove", "memcpy")  # be->zero, be->copy
DSO = [(r"libopenblas", "projections (GEMM)"),
       (r"libmpi|mca_|libopen-pal|libopen-rte|libpmix|libevent|libhwloc|libucp|libucs", "MPI")]


def fail(msg):
    sys.exit("roofline: " + msg)


def symbol_map(top):
    import glob
    defn = re.compile(r"^[A-Za-z_][\w \*]*?\b(\w+)\(")
    out = {}
    for cls, pats in FILES.items():
        for pat in pats:
            for path in sorted(glob.glob(os.path.join(top, pat))):
                with open(path) as f:
                    for line in f:
                        m = defn.match(line)
                        if m and not line.rstrip().endswith(";"):
                            out.setdefault(m.group(1), cls)
    out.update(NAMES)
    return out


def median(v):
    v = sorted(v)
    return v[(len(v) - 1) // 2] if v else 0.0


def read_metrics(path):
    params, train = None, []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                try:
                    e = json.loads(line)
                except ValueError:
                    fail("%s:%d: not a JSON line" % (path, n))
                if e.get("event") == "params":
                    params = e["params"]
                elif e.get("event") == "train":
                    train.append(e)
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    if params is None:
        fail("%s: no params line (output.metrics of a train run)" % path)
    if len(train) < 2:
        fail("%s: %d progress lines; the roofline needs >= 2 (the first is the start-up)"
             % (path, len(train)))
    return params, train


class Step:
    """one rank's step, from the metrics"""

    def __init__(self, params, train):
        p = params
        self.model = p["model.type"]
        self.d, self.layers, self.H = int(p["model.dim"]), int(p["model.layers"]), int(p["model.heads"])
        self.bce = p["train.loss"] == "bce"
        self.R = 1 if self.bce else int(p["train.negatives"])
        self.batch = int(p["train.batch_size"])
        self.dropout = float(p["model.dropout"]) > 0
        rest = train[1:]
        steps = [e["step"] for e in train]
        nsteps = steps[-1] - steps[0]
        self.steps_run = steps[-1]
        self.peak = median([e["peak_gflops"] for e in rest])  # summed over the ranks
        self.phase = {}
        for k in rest[0]:
            if k.endswith("_ms") and not k.endswith("_mpi_ms") and k not in ("wait_ms", "exposed_comm_ms"):
                self.phase[k[:-3]] = (median([e.get(k, 0) for e in rest]),
                                      median([e.get(k[:-3] + "_mpi_ms", 0) for e in rest]))
        self.wait = median([e["wait_ms"] for e in rest])
        self.step_ms = 1e3 * self.batch / median([e["samples_per_s"] for e in rest])
        self.mfu = median([e["mfu"] for e in rest])
        self.tokens_g = sum(e["tokens"] for e in rest) / nsteps  # the global batch's
        self.pairs_g = sum(e["attn_pairs"] for e in rest) / nsteps
        self.flops_g = sum(e["flops"] for e in rest) / nsteps
        self.rows_bytes = median([e.get("rows_bytes", 0) for e in rest])
        self.grads_bytes = median([e.get("grads_bytes", 0) for e in rest])
        self.dense_bytes = median([e.get("dense_bytes", 0) for e in rest])

    def per_rank(self, P):
        self.P = P
        self.T = self.tokens_g / P
        self.S = self.pairs_g / P
        self.B = self.batch / P
        self.U = self.rows_bytes / (4.0 * self.d)
        self.Lr = max(1, int(round(math.sqrt(2.0 * self.S / self.B))))

    def gemm_shapes(self):
        T, d = int(round(self.T)), self.d
        s = {(0, 0, T, d, d), (0, 1, T, d, d), (1, 0, d, d, T), (1, 0, 1, d, T),
             (0, 1, self.Lr, self.Lr, d // self.H)}
        if self.model == "hstu":  # its output projection's bias (SASRec gathers its biases)
            s.add((0, 0, T, d, 1))
        if not self.bce:
            s.add((0, 1, T, self.R + 1, d))
        return sorted(s)

    def triad_bytes(self):
        return 3 * 64 << 20  # 3 arrays of 64 MiB: beyond the caches

    def ops(self):
        """[(class, phase, FLOPs, bytes, gemm shape, "attn", "loss" or None)]
        of one rank's step"""
        T, S, d, Ly, H, R, U = self.T, self.S, self.d, self.layers, self.H, self.R, self.U
        Ti = int(round(T))
        f4 = 4.0 * T * d  # bytes of a [T, d] fp32 tensor
        mask = T * d if self.dropout else 0.0
        o = []
        G, F, B = "projections (GEMM)", "forward", "backward"
        NN, NT, TN = (0, 0, Ti, d, d), (0, 1, Ti, d, d), (1, 0, d, d, Ti)
        R1, TN1 = (0, 0, Ti, d, 1), (1, 0, 1, d, Ti)

        def gm(ph, shape, rw):  # a GEMM call; rw: the floats it reads and writes
            o.append((G, ph, 2.0 * shape[2] * shape[3] * shape[4], 4.0 * rw, shape))

        pair = 4.0 * (4 * d + 8 * H) * S  # the FLOP model's per-pair term of a layer
        if self.model == "hstu":
            for _ in range(Ly):
                for _ in range(4):  # u, v, q, k: [T, d] x [d, hd]
                    gm(F, NN, 2 * T * d)
                gm(F, NN, 3 * T * d)      # the output projection, += onto x
                gm(F, R1, 2 * T * d)      # its bias
                gm(B, TN1, T * d)         # the bias' gradient
                gm(B, TN, 2 * T * d)      # the output projection's weight gradient
                gm(B, NT, 2 * T * d)      # dz
                for b in range(4):
                    gm(B, TN, 2 * T * d)  # uvqk's weight gradient
                    gm(B, NT, (2 if b == 0 else 3) * T * d)  # dn (+= after the first block)
                # LN, SiLU [4T, d], LN, mul, dropout, copy; backward: dropout,
                # 2 mul, LN, SiLU, LN, axpy (the FLOP model's 40 d a token)
                o.append((ELEM, F, 40.0 * d * T, f4 * 19 + 4.0 * 4 * T + mask, None))
                o.append((ELEM, B, 80.0 * d * T, f4 * 29 + 4.0 * 4 * T + mask, None))
                # Q, K, V read, out written; backward: Q, K, V, dO read, dQ,
                # dK, dV written; the timestamps
                o.append(("attention", F, pair / 4, f4 * 4 + 8.0 * T, "attn"))
                o.append(("attention", B, pair * 3 / 4, f4 * 7 + 8.0 * T, "attn"))
            # the input (position rows, scale, dropout), l2norm, copy; backward
            o.append((ELEM, F, 10.0 * d * T, f4 * 11 + mask, None))
            o.append((ELEM, B, 20.0 * d * T, f4 * 9 + mask, None))
        else:
            for _ in range(Ly):
                for lin in range(6):  # q, k, v, out, ffn1, ffn2
                    # the bias' rows gathered (gather_rows: the embedding's
                    # class): y written, the row indices read
                    o.append((EMB, F, 0.0, f4 + 8.0 * T, None))
                    gm(F, NN, 3 * T * d)      # += x W
                    gm(B, TN, 2 * T * d)      # dW
                    gm(B, TN1, T * d)         # db
                    gm(B, NT, (3 if lin in (0, 2, 4) else 2) * T * d)  # dx (+= for three)
                # LN, axpy, LN, dropout, relu, dropout, axpy; backward: 2
                # dropout, relu, 2 LN, axpy
                o.append((ELEM, F, 40.0 * d * T, f4 * 16 + 4.0 * 4 * T + 2 * mask, None))
                o.append((ELEM, B, 80.0 * d * T, f4 * 16 + 4.0 * 4 * T + 2 * mask, None))
                # Q, K, V read, out and the log-sum-exp written; backward: Q,
                # K, V, out, lse, dO read, dQ, dK, dV written
                o.append(("attention", F, pair / 4, f4 * 4 + 4.0 * T, "attn"))
                o.append(("attention", B, pair * 3 / 4, f4 * 8 + 4.0 * T, "attn"))
            o.append((ELEM, F, 10.0 * d * T, f4 * 9 + mask, None))
            o.append((ELEM, B, 20.0 * d * T, f4 * 9 + mask, None))
        rows = 2.0 if self.bce else R + 1.0
        # forward and backward in one call: the user vectors read, their
        # gradient written, the rows' ids, the unique rows read and their
        # gradients read and written
        loss_flops = 3.0 * T * (2.0 * d * rows + (0.0 if self.bce else 6.0 * rows))
        o.append(("loss", F, loss_flops, 2 * f4 + 8.0 * T * rows + 3 * 4.0 * U * d,
                  None if self.bce else "loss"))
        # the embedding side: ids T (inputs) + T rows (targets, negatives)
        n_ids = T * (1 + rows)
        # de-duplication reads them, writes the inverse and the uniques; the
        # negatives' ids written; the ids' exchange
        o.append((EMB, "input_dist", 0.0, 8.0 * (2 * n_ids + U) + 8.0 * T * (rows - 1), None))
        # the owners gather their rows; the tokens' rows indexed from the
        # unique ones; the rows' exchange (copied in and out of shared memory)
        o.append((EMB, "lookup", 0.0, 4.0 * 2 * U * d + 2 * f4, None))
        o.append(("MPI", "lookup", 0.0, 2.0 * self.rows_bytes, None))
        # the tokens' gradients summed onto their rows
        o.append((EMB, B, 0.0, f4 + 4.0 * 2 * U * d, None))
        # the gradients' exchange; row-wise Adam (w, m, v, g read; w, m, v written)
        o.append(("MPI", "grad_exchange", 0.0, 2.0 * self.grads_bytes, None))
        o.append((EMB, "grad_exchange", 10.0 * U * d, 4.0 * 7 * U * d, None))
        # the dense all-reduce (a ring, copied in and out); AdamW and the norm
        pd = self.dense_bytes / 4.0
        o.append(("MPI", "allreduce", 0.0, 2.0 * 2 * (self.P - 1) / self.P * self.dense_bytes, None))
        o.append((DENSE, "optimizer", 12.0 * pd, 4.0 * 8 * pd, None))
        # the sequences' item ids and timestamps read
        o.append(("other", "read", 0.0, 16.0 * T, None))
        return o


def read_rates(path):
    rates, triad, blas = {}, None, ""
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                w = line.split()
                if w and w[0] == "blas":
                    blas = line[5:].strip()
                elif len(w) == 3 and w[0] == "gemm":
                    rates[tuple(int(x) for x in w[1].split(","))] = float(w[2])
                elif len(w) == 3 and w[0] == "triad":
                    triad = float(w[2])
                elif w:
                    fail("%s:%d: not a line of bench_roofline: %s" % (path, n, line.strip()))
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    if triad is None:
        fail("%s: no triad line (the bandwidth)" % path)
    return rates, triad, blas


# the step's phases by the functions of train/train_step.c and
# train/step_input.c on a sample's call chain
PHASE_FN = [("step_input_read", "read input_dist"), ("phase_lookup", "lookup"),
            ("phase_forward_loss", "forward"), ("phase_backward", "backward"),
            ("phase_grad_exchange", "grad_exchange"), ("phase_dense_allreduce", "allreduce")]
PHASE_REST = "rest of the step"
# the model's step functions: a sample under one is inside a step
STEP_ONLY = re.compile(r"^(hstu|sasrec)_(forward|backward)$|^phase_")


def classify(chain, syms):
    """a sample's kernel class: a page fault's; else its first frame (from
    the leaf) defined in a class's files, or in an MPI library; a GEMM's
    under the model's code; libc's memset/memmove as a leaf is the
    caller's (be->zero, be->copy) unless nothing claims it"""
    if chain and chain[0][1] == "[kernel.kallsyms]" and any(
            s in ("exc_page_fault", "asm_exc_page_fault") for s, _ in chain):
        return KERNEL
    libc_elem = blas = False
    for sym, dso in chain:
        cls = syms.get(re.split(r"[.@]", sym)[0])
        if cls == "model":
            return "projections (GEMM)" if blas else "other"
        if cls:
            return cls
        blas = blas or bool(re.search(DSO[0][0], dso))
        if any(re.search(pat, dso) for pat, _ in DSO[1:]):
            return "MPI"
        if dso.startswith("libc") and any(x in sym for x in LIBC_ELEM):
            libc_elem = True
    if any(re.search(DSO[0][0], dso) for _, dso in chain):
        return "projections (GEMM)"
    return ELEM if libc_elem else "other"


def read_profile(path, syms):
    """one rank's `perf script -F time,period,ip,sym,dso` of the whole run
    (call chains): ({class: CPU ms}, {phase: CPU ms}) of the samples between
    the first and the last inside a training step (a step function, the
    attention or the loss on the chain), the CPU ms outside (start-up, the
    end), and the CPU ms of chains cut short (perf's unwinder gave up below
    the phase function or the GEMM's caller): such a sample takes the phase
    of the nearest sample in time that has one, and a GEMM without its
    caller the class of the nearest GEMM with one (GEMM calls and phases
    last longer than the sampling period)"""
    frame = re.compile(r"^\s+[0-9a-f]+\s+(\S+?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)\s*$")
    head = re.compile(r"^\s*(\d+\.\d+):\s+(\d+)\s*$")
    samples = []  # [time, ns, chain]
    try:
        f = open(path)
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    with f:
        for line in f:
            if line.strip() == "":
                continue
            m = frame.match(line)
            if m and samples:
                samples[-1][2].append((m.group(1), os.path.basename(m.group(2))))
                continue
            m = head.match(line)
            if not m:
                fail("%s: '%s' is not a line of perf script -F time,period,ip,sym,dso"
                     % (path, line.strip()))
            samples.append([float(m.group(1)), int(m.group(2)), []])
    def step_only(chain):  # code that runs in training steps only (eval is off)
        return any(sym == "train_step" or STEP_ONLY.match(sym) or
                   syms.get(re.split(r"[.@]", sym)[0]) in ("attention", "loss")
                   for sym, _ in chain)

    steps = [t for t, _, ch in samples if step_only(ch)]
    if not steps:
        fail("%s: no sample inside a training step (perf record --call-graph dwarf of a train "
             "run)" % path)
    t0, t1 = min(steps), max(steps)
    out, phases, outside = dict.fromkeys(CLASSES, 0.0), {}, 0.0
    blas = re.compile(DSO[0][0])
    ph_t, ph_v, g_t, g_cls, todo = [], [], [], [], []
    for t, ns, chain in samples:
        ms = ns / 1e6  # cpu-clock: nanoseconds
        if t < t0 or t > t1:
            outside += ms
            continue
        names = [sym for sym, _ in chain]
        in_blas = any(blas.search(d) for _, d in chain)
        ph = next((p for fn, p in PHASE_FN if fn in names), None)
        if ph is None and "train_step" in names:
            ph = PHASE_REST
        cls = classify(chain, syms)
        if in_blas and cls in ("other", "projections (GEMM)") and not any(
                syms.get(re.split(r"[.@]", sym)[0]) == "model" for sym in names):
            cls = None  # a GEMM whose caller perf lost
        if cls is None or ph is None:
            todo.append((t, ms, cls, ph))
            continue
        out[cls] += ms
        phases[ph] = phases.get(ph, 0.0) + ms
        ph_t.append(t)
        ph_v.append(ph)
        if in_blas:
            g_t.append(t)
            g_cls.append(cls)

    def nearest(times, vals, t, default):
        if not times:
            return default
        i = bisect.bisect_left(times, t)
        return vals[min((j for j in (i - 1, i) if 0 <= j < len(times)), key=lambda j: abs(times[j] - t))]

    cut_ms = 0.0
    for t, ms, cls, ph in todo:
        cut_ms += ms
        cls = cls or nearest(g_t, g_cls, t, "projections (GEMM)")
        ph = ph or nearest(ph_t, ph_v, t, PHASE_REST)
        out[cls] += ms
        phases[ph] = phases.get(ph, 0.0) + ms
    return out, phases, outside, cut_ms


# the rows of the phase table: (label, the metrics' phases, perf's phases)
PHASE_ROWS = [("read + plan + input_dist", ["read", "plan", "input_dist"], ["read input_dist"]),
              ("lookup", ["lookup"], ["lookup"]), ("forward", ["forward"], ["forward"]),
              ("backward", ["backward"], ["backward"]),
              ("grad_exchange", ["grad_exchange"], ["grad_exchange"]),
              ("allreduce", ["allreduce"], ["allreduce"]),
              ("optimizer + rest", ["optimizer", "kv", "prefetch", "late"], [PHASE_REST])]


def table(st, rates, bw, blas, profiles, label):
    def rate(shape):
        if shape not in rates:
            fail("no sgemm rate at %s in the rates (run --shapes)" % (shape,))
        return rates[shape]

    flops, bytes_, bound = (dict.fromkeys(CLASSES, 0.0) for _ in range(3))
    by = dict.fromkeys(CLASSES, "")
    pbound = {}
    for cls, ph, fl, by_, shape in st.ops():
        if shape == "attn":
            r = rate((0, 1, st.Lr, st.Lr, st.d // st.H))
        elif shape == "loss":
            r = rate((0, 1, int(round(st.T)), st.R + 1, st.d))
        else:
            r = rate(shape) if shape else None
        tc = fl / (r * 1e9) if r else 0.0
        tm = by_ / (bw * 1e9)
        flops[cls] += fl
        bytes_[cls] += by_
        bound[cls] += 1e3 * max(tc, tm)
        row = next(lab for lab, mets, _ in PHASE_ROWS if ph in mets)
        pbound[row] = pbound.get(row, 0.0) + 1e3 * max(tc, tm)
        if by_ or fl:
            by[cls] = "sgemm" if (r and tc >= tm) or by[cls] == "sgemm" else "bandwidth"
    steps = st.steps_run
    meas, pcpu, outside, cut = dict.fromkeys(CLASSES, 0.0), {}, 0.0, 0.0
    for cls_ms, ph_ms, out_ms, cut_ms in profiles:
        cut += cut_ms / len(profiles) / steps
        for k, v in cls_ms.items():
            meas[k] += v / len(profiles) / steps
        for k, v in ph_ms.items():
            pcpu[k] = pcpu.get(k, 0.0) + v / len(profiles) / steps
        outside += out_ms / len(profiles)
    print("roofline %s: %d ranks; per rank and step: T = %.0f tokens, B = %.0f sequences, "
          "S = %.0f pairs (Lr = %d), U = %.0f rows, %.0f dense parameters, %d steps"
          % (label, st.P, st.T, st.B, st.S, st.Lr, st.U, st.dense_bytes / 4, steps))
    m = re.match(r"(.*?kernels \S+)", blas)
    print("rates (1 core, %s): stream triad %.2f GB/s; sgemm GFLOP/s at M x N x K (T: A "
          "transposed, ^T: B transposed) %s"
          % (m.group(1) if m else blas, bw,
             ", ".join("%s%s%s %.1f" % ("x".join(str(v) for v in k[2:]), "^T" if k[1] else "",
                                        " (T)" if k[0] else "", v)
                       for k, v in sorted(rates.items()))))
    print("%-20s %8s %8s %7s %9s %9s %8s  %s" % ("kernel class", "GFLOP", "MB", "FLOP/B",
                                               "CPU ms", "bound ms", "bnd/CPU", "bound by"))
    tot = [0.0] * 4
    for c in CLASSES:
        for i, v in enumerate((flops[c], bytes_[c], meas[c], bound[c])):
            tot[i] += v
        share = "%7.0f%%" % (100 * bound[c] / meas[c]) if meas[c] > 0 and bound[c] > 0 else "%8s" % "-"
        print("%-20s %8.3f %8.2f %7s %9.2f %9.2f %s  %s"
              % (c, flops[c] / 1e9, bytes_[c] / 1e6, "%.1f" % (flops[c] / bytes_[c]) if bytes_[c] else "-",
                 meas[c], bound[c], share, by[c] or "-"))
    print("%-20s %8.3f %8.2f %7.1f %9.2f %9.2f %7.0f%%" % ("step (one rank)", tot[0] / 1e9, tot[1] / 1e6,
                                                       tot[0] / tot[1], tot[2], tot[3],
                                                       100 * tot[3] / tot[2] if tot[2] else 0))
    print("%-26s %9s %8s %9s %9s" % ("phase (ms a step)", "wall", "in MPI", "CPU", "bound"))
    # the phases' CPU from mostly borrowed phases would be a guess: not shown
    cut_share = cut / sum(pcpu.values()) if pcpu else 0.0
    for lab, mets, perfs in PHASE_ROWS:
        cpu = "%9.2f" % sum(pcpu.get(n, 0.0) for n in perfs) if cut_share <= 0.5 else "%9s" % "-"
        print("%-26s %9.2f %8.2f %s %9.2f" % (lab, sum(st.phase.get(n, (0, 0))[0] for n in mets),
                                            sum(st.phase.get(n, (0, 0))[1] for n in mets),
                                            cpu, pbound.get(lab, 0.0)))
    sum_b = sum(pbound.values())
    print("%-26s %9.2f %8.2f %9.2f %9.2f" % ("step", st.step_ms, st.wait, sum(pcpu.values()), sum_b))
    att = st.flops_g / st.P / (sum_b * 1e-3) / 1e9
    peak1 = rates.get((0, 0, 512, 512, 512))
    print("MFU: progress line %.1f%% (the FLOP model's %.2f GFLOP a step over the ranks' peak, "
          "%.0f GFLOP/s summed); at the step's sum of bounds %.1f%% (%.0f GFLOP/s a rank)%s; "
          "outside the steps (start-up, end) %.0f CPU ms a rank; chains perf cut short %.0f%% of "
          "the steps' CPU ms (phase or GEMM caller from the nearest sample with one; the "
          "phases' CPU not shown above half)"
          % (100 * st.mfu, st.flops_g / 1e9, st.peak, 100 * att / (st.peak / st.P), att,
             "; 512^3 sgemm here %.0f GFLOP/s a core" % peak1 if peak1 else "", outside,
             100 * cut_share))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", metavar="METRICS")
    ap.add_argument("--metrics")
    ap.add_argument("--rates")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--label", default="")
    ap.add_argument("profiles", nargs="*")
    a = ap.parse_args()
    if a.ranks < 1:
        fail("--ranks %d: give >= 1" % a.ranks)
    if a.shapes:
        st = Step(*read_metrics(a.shapes))
        st.per_rank(a.ranks)
        print(" ".join(["triad:%d" % st.triad_bytes()] + ["gemm:%d,%d,%d,%d,%d" % s for s in st.gemm_shapes()]
                       + ["gemm:0,0,512,512,512"]))
        return
    if not a.metrics or not a.rates or not a.profiles:
        fail("give --metrics, --rates and one or more profiles (or --shapes METRICS)")
    st = Step(*read_metrics(a.metrics))
    st.per_rank(a.ranks)
    rates, bw, blas = read_rates(a.rates)
    syms = symbol_map(a.src)
    table(st, rates, bw, blas, [read_profile(p, syms) for p in a.profiles], a.label or st.model)


if __name__ == "__main__":
    main()
