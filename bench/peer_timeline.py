#!/usr/bin/python3
"""peer_timeline: the per-peer, per-chunk picture of one training step from
a trace written with output.trace_peers = on (doc/overlap.md, "Per-peer
trace").

    bench/peer_timeline.py TRACE [STEP] [KINDS] [MBIT]

STEP counts the steps of the trace window from 1 as bench/trace_timeline.py
does (default: the last complete one). KINDS: the transfers shown, comma-
separated (default rows0,rows1; "all" for every kind: ids, rows0, rows1,
grads0, grads1, mask, pf, late).

For every receiving rank, per sending peer and kind, in ms from the
receiving rank's start of the step: when the sender posted its send, when
the receiver posted its receive, when the sender saw its send complete,
when the receiver saw its receive complete ("done": at its first test or
wait after the last byte came), and when the receiver consumed the kind;
the senders' times are put on the receiver's clock through each rank's
origin (one monotonic clock per host: the namespace nodes of
scripts/cluster.sh share it). Then the links: for every node, what its
inbound link carried from the other nodes per kind, the first post and the
last completion, and the rate of the whole (bytes over last done - first
post); with MBIT (the link's rate in Mbit/s) also each kind's wire time at
that rate, alone and behind the kinds before it."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_timeline import steps_of  # noqa: E402


def load(path):
    try:
        with open(path) as f:
            ev = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"peer_timeline: {path}: {e}")
    meta, phases, peer = {}, {}, []
    for e in ev:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            meta[e["tid"]] = e.get("args", {})
        elif e.get("ph") == "X":
            phases.setdefault(e["tid"], []).append(e)
        elif e.get("cat") == "peer":
            a = e["args"]
            peer.append((e["tid"], a["ev"], e["ts"], a["table"], a["kind"], a["peer"],
                         a["bytes"]))
    if not peer:
        sys.exit(f"peer_timeline: {path}: no per-peer events (run with output.trace_peers=on)")
    if any("origin_s" not in meta.get(r, {}) for r in phases):
        sys.exit(f"peer_timeline: {path}: a rank without origin_s")
    return meta, phases, peer


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    meta, phases, peer = load(path)
    kinds = (sys.argv[3] if len(sys.argv) > 3 else "rows0,rows1").split(",")
    mbit = float(sys.argv[4]) if len(sys.argv) > 4 else 0
    origin = {r: meta[r]["origin_s"] * 1e6 for r in phases}  # us
    node = {r: meta[r].get("node", r) for r in phases}
    # the chosen step's window per rank, in absolute us
    win, step_phases = {}, {}
    for r, sl in sorted(phases.items()):
        st = steps_of(sorted(sl, key=lambda s: s["ts"]))
        k = int(sys.argv[2]) if len(sys.argv) > 2 else len(st)
        if not 1 <= k <= len(st):
            sys.exit(f"peer_timeline: {path}: step {k} outside 1..{len(st)}")
        a = st[k - 1][0]["ts"]
        b = st[k][0]["ts"] if k < len(st) else st[k - 1][-1]["ts"] + st[k - 1][-1]["dur"]
        win[r] = (origin[r] + a, origin[r] + b)
        step_phases[r] = st[k - 1]
    # the n-th send of (src, dst, table, kind) is the n-th receive at dst of it
    sends, recvs, consumed = {}, {}, {}
    for rank, ev, ts, table, kind, p, nbytes in sorted(peer, key=lambda x: x[2]):
        t = origin[rank] + ts
        if ev in ("post_send", "done_send"):
            sends.setdefault((rank, p, table, kind), {}).setdefault(ev, []).append((t, nbytes))
        elif ev in ("post_recv", "done_recv"):
            recvs.setdefault((p, rank, table, kind), {}).setdefault(ev, []).append((t, nbytes))
        elif ev == "consumed":
            consumed.setdefault((rank, table, kind), []).append(t)
    rows = []  # (dst, kind, src, table, bytes, s_post, r_post, s_done, r_done)
    for (src, dst, table, kind), rv in recvs.items():
        if "all" not in kinds and kind not in kinds:
            continue
        sv = sends.get((src, dst, table, kind), {})
        for i, (rp, nbytes) in enumerate(rv.get("post_recv", [])):
            if not win[dst][0] <= rp < win[dst][1]:
                continue

            def nth(lst):
                return lst[i][0] if lst and i < len(lst) else None
            rows.append((dst, kind, src, table, nbytes, nth(sv.get("post_send")), rp,
                         nth(sv.get("done_send")), nth(rv.get("done_recv"))))
    k = int(sys.argv[2]) if len(sys.argv) > 2 else len(steps_of(
        sorted(next(iter(phases.values())), key=lambda s: s["ts"])))
    print(f"{path}: step {k}; ms from the receiving rank's start of the step "
          f"(senders' events on its clock); done = completion seen by a test or wait")

    def ms(t, r):
        return "      -" if t is None else f"{(t - win[r][0]) / 1000:7.1f}"
    for dst in sorted(win):
        ph = step_phases[dst]
        t0 = ph[0]["ts"]
        spans = []
        for name in ("lookup", "forward", "backward", "grad_exchange"):
            s = [x for x in ph if x["name"] == name]
            if s:
                spans.append(f"{name} {(s[0]['ts'] - t0) / 1000:.1f}-"
                             f"{(s[-1]['ts'] + s[-1]['dur'] - t0) / 1000:.1f}")
        print(f"\nrank {dst} (node {node[dst]}): " + ", ".join(spans))
        print("  kind    from    node        bytes  send posted  recv posted  send done  "
              "recv done  consumed")
        for r in sorted((x for x in rows if x[0] == dst), key=lambda x: (x[1], x[2])):
            _, kind, src, table, nbytes, sp, rp, sd, rd = r
            cons = [t for t in consumed.get((dst, table, kind), []) if t >= rp]
            print(f"  {kind:<7} {'r' + str(src):<7} {node[src]:>4} {nbytes:12.0f}      {ms(sp, dst)}"
                  f"      {ms(rp, dst)}    {ms(sd, dst)}    {ms(rd, dst)}   "
                  f"{ms(cons[0] if cons else None, dst)}")
        own = []  # this rank's sends of the kinds shown: the other way on the same connections
        for (src, to, table, kind), sv in sends.items():
            if src != dst or ("all" not in kinds and kind not in kinds):
                continue
            for i, (sp, nbytes) in enumerate(sv.get("post_send", [])):
                if win[dst][0] <= sp < win[dst][1]:
                    sd = sv.get("done_send", [])
                    own.append((kind, to, nbytes, sp, sd[i][0] if i < len(sd) else None))
        for kind, to, nbytes, sp, sd in sorted(own):
            print(f"  {kind:<7} {'to r' + str(to):<7} {node[to]:>4} {nbytes:12.0f}      {ms(sp, dst)}"
                  f"                   {ms(sd, dst)}      (this rank's send)")
        summary = []
        for kind in sorted({x[1] for x in rows if x[0] == dst}):
            xs = [x for x in rows if x[0] == dst and x[1] == kind]
            done = [x[8] for x in xs if x[8] is not None]
            if not done:
                continue
            last = max(xs, key=lambda x: x[8] or 0)
            cons = [t for t in consumed.get((dst, last[3], kind), []) if t >= last[6]]
            summary.append(f"{kind} {sum(x[4] for x in xs) / 1e6:.2f} MB all done "
                           f"{ms(max(done), dst).strip()} (last r{last[2]})"
                           + (f" consumed {ms(cons[0], dst).strip()}" if cons else ""))
        if summary:
            print("  = " + "; ".join(summary))
    print("\nlinks (inbound per node, from ranks on other nodes; ms from the step start of "
          "the node's first rank):")
    if len(set(node.values())) == 1:
        print("  none: every rank on one node")
    for n in sorted(set(node.values())):
        here = [r for r in win if node[r] == n]
        ref = min(here)
        ins = [x for x in rows if node[x[0]] == n and node[x[2]] != n]
        peers = sorted({x[2] for x in ins})
        if not ins:
            continue
        print(f"  node {n} (ranks {','.join(map(str, sorted(here)))}) <- "
              f"{len(peers)} peers ({','.join('r' + str(p) for p in peers)}):")
        tot_b, first, last, ahead = 0, None, None, 0
        for kind in sorted({x[1] for x in ins}):
            xs = [x for x in ins if x[1] == kind]
            b = sum(x[4] for x in xs)
            posts = [t for x in xs for t in (x[5], x[6]) if t is not None]
            dones = [x[8] for x in xs if x[8] is not None]
            p0 = max(min(t for t in (x[5], x[6]) if t is not None) for x in xs) if posts \
                else None  # a message moves once both sides posted
            d0 = min(dones) if dones else None
            d1 = max(dones) if dones else None
            tot_b += b
            first = p0 if first is None or (p0 is not None and p0 < first) else first
            last = d1 if last is None or (d1 is not None and d1 > last) else last
            wire = ""
            if mbit > 0:
                ahead += b
                wire = (f"  wire at {mbit:g} Mbit/s: {b * 8 / mbit / 1e3:.1f} ms alone, "
                        f"{ahead * 8 / mbit / 1e3:.1f} ms with the kinds above")
            print(f"    {kind:<7} {b / 1e6:8.2f} MB  both posted by {ms(p0, ref)}  "
                  f"first done {ms(d0, ref)}  last done {ms(d1, ref)}{wire}")
        if first is not None and last is not None and last > first:
            print(f"    all      {tot_b / 1e6:8.2f} MB  in {(last - first) / 1000:.1f} ms: "
                  f"{tot_b * 8 / (last - first):.0f} Mbit/s")


if __name__ == "__main__":
    main()
