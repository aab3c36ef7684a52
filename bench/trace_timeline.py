#!/usr/bin/python3
"""trace_timeline: one training step of a freescale trace (output.trace,
Chrome trace-event JSON) as a text timeline, one row per phase and rank.

    bench/trace_timeline.py TRACE [STEP] [WIDTH]

STEP counts the steps in the trace window from 1 (default: the last
complete one); a step ends with its "optimizer" slice and the slices that
follow it up to the next "optimizer" belong to the next step (the final
loss all-reduce, the next step's read). Columns are time from each rank's start of
the step, WIDTH characters (default 72) for the longest rank's step; each
phase's cells are '#'."""
import json
import sys


def steps_of(slices):
    """Split one rank's slices (sorted by start) into steps ending with
    the slice after "optimizer" (the step's last all-reduce)."""
    steps, cur, closing = [], [], False
    for s in slices:
        cur.append(s)
        if closing:
            steps.append(cur)
            cur, closing = [], False
        elif s["name"] == "optimizer":
            closing = True
    return steps


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    try:
        with open(path) as f:
            ev = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"trace_timeline: {path}: {e}")
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 72
    ranks = {}
    for e in ev:
        if e.get("ph") == "X":
            ranks.setdefault(e["tid"], []).append(e)
    if not ranks:
        sys.exit(f"trace_timeline: {path}: no slices")
    chosen = {}
    for r, sl in sorted(ranks.items()):
        st = steps_of(sorted(sl, key=lambda s: s["ts"]))
        if not st:
            sys.exit(f"trace_timeline: {path}: rank {r} has no complete step")
        k = int(sys.argv[2]) if len(sys.argv) > 2 else len(st)
        if not 1 <= k <= len(st):
            sys.exit(f"trace_timeline: {path}: step {k} outside 1..{len(st)}")
        chosen[r] = st[k - 1]
    span = max(s[-1]["ts"] + s[-1]["dur"] - s[0]["ts"] for s in chosen.values())
    scale = width / span
    print(f"{path}: step {k} of the trace, {span / 1000:.1f} ms (each rank from its own "
          f"start); one column = {span / width / 1000:.2f} ms")
    for r, st in sorted(chosen.items()):
        t0 = st[0]["ts"]
        order = []
        for s in st:
            if s["name"] not in order:
                order.append(s["name"])
        for name in order:
            row = [" "] * width
            ms = 0.0
            for s in st:
                if s["name"] != name:
                    continue
                a = int((s["ts"] - t0) * scale)
                b = max(a + 1, int((s["ts"] + s["dur"] - t0) * scale))
                for i in range(a, min(b, width)):
                    row[i] = "#"
                ms += s["dur"] / 1000
            print(f"rank {r} {name:<13} |{''.join(row)}| {ms:7.1f} ms")


if __name__ == "__main__":
    main()
