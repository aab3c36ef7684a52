#!/usr/bin/env python3
"""bound: the exposed communication no ordering can remove, from a run's
metrics (output.metrics) and the link's rate (doc/overlap.md, "The bound").

    bound.py --rate 500mbit [--ranks-per-node G] [--compute NONE.jsonl]...
             [--chunk0 SHARE] [--label NAME] [--header] RUN.jsonl [RUN.jsonl ...]

RUN.jsonl: the metrics of one or more runs of one configuration and mode
(rounds); each file's first progress interval (the start-up) is left out,
every field is the median over the remaining intervals of all files.
--compute: the runs whose forward and backward are taken as the compute
(default the runs themselves): parallel.overlap = none's, in which nothing
waits inside the forward or the backward; of forward_ms and backward_ms
the time inside MPI (forward_mpi_ms, backward_mpi_ms) is left out where
the metrics have it; the busy time is the step (train.batch_size /
samples_per_s) less exposed_comm_ms. Prints one line:
the measured exposed time (exposed_comm_ms: the time inside MPI's waits),
"over" (the run's step less the compute runs' busy time: what the step
spends beyond the compute, which counts the MPI calls that push bytes
between the layers too), the bound and both ratios, the wire time of each
kind on the busiest link and direction, and the compute.

The model (all per step, one link per node, full duplex, a FIFO per node
and direction, every byte crossing at the link's rate with TCP/IP's
framing, MTU 1500):
  bytes   each node's ranks' sends to other nodes per kind (xsent_ids.N,
          xsent_rows.N, xsent_grads.N); what a node receives: its rows are
          the rows its gradients answer (rows_in = grads_out x rows / grads
          summed over nodes), the gradients it receives answer the rows it
          served, the ids it receives ask for them; the dense all-reduce a
          ring over the P ranks, every neighbour on another node (--map-by
          node): 2 (P - 1) / P x dense_bytes per rank, G ranks per node
  chunks  chunk 0 (the inputs' rows) a share 1 / (2 + train.negatives) of
          the rows (1/3 with train.loss = bce: a token's input row beside
          its target's and negatives'; --chunk0 to give a measured share),
          chunk 1 the rest; with prefetch the rows come ahead but the
          collision share (late)
  phases  wire(phase) = max over nodes and directions of its kinds' bytes
          / rate; bound = sum over phases of max(0, wire - compute):
    none         ids, rows, gradients + dense: each behind nothing
    prioritized  chunk 0 behind nothing; chunk 1 behind the forward;
                 the next step's ids, the gradients and the dense buckets
                 behind the backward
    prefetch     the next step's ids behind the forward; the gradients
                 behind the backward, then the next step's rows (ahead and
                 late) behind what is left of the backward and the step's
                 other compute (the host work: reading, the owners'
                 gathers, the sparse update, the optimizer; busy time -
                 forward - backward), the best order (the gradients first:
                 they are needed first); the dense all-reduce (in one
                 piece, after the update) behind nothing
    pipeline     as none, the next step's ids behind this step's forward and
                 backward
Uses only Python's standard library.
"""
import argparse
import json
import re
import sys

FRAMING = 1514.0 / 1448.0  # Ethernet frame per TCP payload (MTU 1500, timestamps)
UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
         "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
         "kibit": 1024, "mibit": 1024 ** 2, "gibit": 1024 ** 3, "tibit": 1024 ** 4}


def rate_Bps(text):
    """tc's rate (500mbit, 4gbit, 10mbps) in bytes per second."""
    m = re.fullmatch(r"([0-9.]+(?:[eE][-+]?[0-9]+)?)([a-zA-Z]*)", text.strip())
    u = m and (m.group(2).lower() or "bit")
    if not m or u not in UNITS or float(m.group(1)) <= 0:
        sys.exit("bound: rate '%s': expected tc's units, e.g. 500mbit, 4gbit" % text)
    return float(m.group(1)) * UNITS[u] / 8


def median(v):
    v = sorted(v)
    return v[(len(v) - 1) // 2] if v else float("nan")


def read(paths):
    """Per field, the median over the train lines (each file's first left
    out); the run's parameters (the first file's)."""
    vals, params = {}, None
    for path in paths:
        n = 0
        try:
            f = open(path)
        except OSError as e:
            sys.exit("bound: cannot open %s: %s" % (path, e.strerror))
        with f:
            for ln, line in enumerate(f, 1):
                try:
                    o = json.loads(line)
                except ValueError:
                    sys.exit("bound: %s:%d: not a JSON line (a metrics file of "
                             "'freescale train' expected)" % (path, ln))
                if o.get("event") == "params" and params is None:
                    params = o.get("params", {})
                if o.get("event") != "train":
                    continue
                n += 1
                if n == 1:
                    continue
                for k, v in o.items():
                    if isinstance(v, (int, float)):
                        vals.setdefault(k, []).append(float(v))
        if n < 2:
            sys.exit("bound: %s: %d progress line(s); 2 or more expected (the first, the "
                     "start-up, is left out)" % (path, n))
    return {k: median(v) for k, v in vals.items()}, params or {}


def links(m, G):
    """Per node, the bytes out and in per kind: {kind: [(out, in) per node]}."""
    N = 0
    while "xsent_rows.%d" % N in m:
        N += 1
    if N < 2:
        sys.exit("bound: the metrics hold %d node(s) (xsent_rows.N): a run over 2 or more "
                 "nodes, by a freescale that reports them, expected" % N)
    ids = [m["xsent_ids.%d" % i] for i in range(N)]
    rows = [m["xsent_rows.%d" % i] for i in range(N)]
    grads = [m["xsent_grads.%d" % i] for i in range(N)]
    rg = sum(rows) / sum(grads) if sum(grads) > 0 else 1
    ir = sum(ids) / sum(rows) if sum(rows) > 0 else 0
    P = N * G
    dense = 2.0 * (P - 1) / P * m.get("dense_bytes", 0) * G
    return N, {
        "ids": [(ids[i], rows[i] * ir) for i in range(N)],
        "rows": [(rows[i], grads[i] * rg) for i in range(N)],
        "grads": [(grads[i], rows[i] / rg if rg > 0 else 0) for i in range(N)],
        "dense": [(dense, dense) for _ in range(N)],
    }


def wire(L, Bps, parts):
    """Seconds on the busiest link and direction of the kinds parts
    [(kind, share)], all on the same link at once."""
    N = len(L["rows"])
    most = 0
    for i in range(N):
        for d in (0, 1):
            most = max(most, sum(s * L[k][i][d] for k, s in parts))
    return 1e3 * most * FRAMING / Bps


def bound(m, params, mode, Bps, G, F, B, H, chunk0=None):
    """The bound's phases [(name, wire ms, compute ms)] and kinds' wire ms."""
    N, L = links(m, G)
    if chunk0 is None:
        bce = params.get("train.loss") == "bce"
        chunk0 = 1.0 / (3.0 if bce else 2.0 + float(params.get("train.negatives", 0)))
    late = m.get("collision", 0) if mode == "prefetch" else 0
    kinds = {"ids": wire(L, Bps, [("ids", 1)]),
             "rows0": wire(L, Bps, [("rows", chunk0)]),
             "rows1": wire(L, Bps, [("rows", 1 - chunk0)]),
             "pf": wire(L, Bps, [("rows", 1 - late)]) if mode == "prefetch" else 0,
             "grads": wire(L, Bps, [("grads", 1)]),
             "dense": wire(L, Bps, [("dense", 1)])}
    if mode == "none":
        ph = [("ids", kinds["ids"], 0), ("rows", wire(L, Bps, [("rows", 1)]), 0),
              ("grads", kinds["grads"], 0), ("dense", kinds["dense"], 0)]
    elif mode == "pipeline":
        ph = [("ids", kinds["ids"], F + B), ("rows", wire(L, Bps, [("rows", 1)]), 0),
              ("grads", kinds["grads"], 0), ("dense", kinds["dense"], 0)]
    elif mode == "prioritized":
        ph = [("rows0", kinds["rows0"], 0), ("rows1", kinds["rows1"], F),
              ("ids+grads+dense", wire(L, Bps, [("ids", 1), ("grads", 1), ("dense", 1)]), B)]
    elif mode == "prefetch":
        ph = [("ids", kinds["ids"], F), ("grads", kinds["grads"], B),
              ("pf+late", wire(L, Bps, [("rows", 1)]), H + max(0.0, B - kinds["grads"])),
              ("dense", kinds["dense"], 0)]
    else:
        sys.exit("bound: parallel.overlap = '%s' unknown (none, pipeline, prioritized, "
                 "prefetch)" % mode)
    return N, ph, kinds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", required=True, help="the links' rate, tc's units (500mbit)")
    ap.add_argument("--ranks-per-node", type=int, default=1)
    ap.add_argument("--compute", action="append", help="a metrics file whose forward and "
                    "backward are the compute (parallel.overlap = none's runs; repeated)")
    ap.add_argument("--chunk0", type=float, help="chunk 0's share of the rows' bytes")
    ap.add_argument("--eff", type=float, default=0, help="the share of the rate the "
                    "transport reaches on this machine (scaling.sh: fitted on none's runs): "
                    "adds the bound at rate x EFF")
    ap.add_argument("--label", help="the line's name (default the mode)")
    ap.add_argument("--header", action="store_true", help="print the columns' names first")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    Bps = rate_Bps(a.rate)
    if a.ranks_per_node < 1:
        sys.exit("bound: --ranks-per-node %d: 1 or more expected" % a.ranks_per_node)
    if a.eff < 0 or a.eff > 1:
        sys.exit("bound: --eff %g: a share in (0, 1] expected" % a.eff)
    if a.chunk0 is not None and not 0 <= a.chunk0 <= 1:
        sys.exit("bound: --chunk0 %g: a share in [0, 1] expected" % a.chunk0)
    m, params = read(a.runs)
    c, cparams = read(a.compute) if a.compute else (m, params)
    mode = params.get("parallel.overlap", "prioritized")
    # the phases' compute: less their time inside MPI where the metrics say it
    F = c.get("forward_ms", 0) - c.get("forward_mpi_ms", 0)
    B = c.get("backward_ms", 0) - c.get("backward_mpi_ms", 0)
    cb = float(cparams.get("train.batch_size", 0))
    if cb <= 0 or c.get("samples_per_s", 0) <= 0:
        sys.exit("bound: the compute runs' train.batch_size or samples_per_s is missing")
    busy = 1e3 * cb / c["samples_per_s"] - c.get("exposed_comm_ms", 0)
    H = max(0.0, busy - F - B)
    rb = float(params.get("train.batch_size", 0))
    over = 1e3 * rb / m["samples_per_s"] - busy if rb > 0 and m.get("samples_per_s", 0) > 0 \
        else float("nan")
    N, ph, k = bound(m, params, mode, Bps, a.ranks_per_node, F, B, H, a.chunk0)
    b = sum(max(0.0, w - cp) for _, w, cp in ph)
    e = m.get("exposed_comm_ms", float("nan"))
    be = sum(max(0.0, w - cp) for _, w, cp in
             bound(m, params, mode, Bps * a.eff, a.ranks_per_node, F, B, H, a.chunk0)[1]) \
        if a.eff > 0 else None
    if a.header:
        print("%-20s %8s %8s %8s %5s %5s | %-41s | %-20s" % (
            "", "exposed", "over", "bound", "e/b", "o/b", "wire ms (busiest link and direction)",
            "compute ms"))
        print("%-20s %8s %8s %8s %5s %5s | %6s %6s %6s %6s %6s %6s | %6s %6s %6s" % (
            "run", "ms", "ms", "ms", "", "", "ids", "rows0", "rows1", "pf", "grads", "dense",
            "fwd", "bwd", "host"))
    ratio = lambda x, y: "%.2f" % (x / y) if y and y > 0 and x == x else "-"
    tail = "" if be is None else " | eff %.2f: bound %8.1f e/b %5s" % (a.eff, be, ratio(e, be))
    print("%-20s %8.1f %8.1f %8.1f %5s %5s | %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f | %6.1f %6.1f %6.1f%s"
          % (a.label or mode, e, over, b, ratio(e, b), ratio(over, b), k["ids"], k["rows0"],
             k["rows1"], k["pf"], k["grads"], k["dense"], F, B, H, tail))


if __name__ == "__main__":
    main()
