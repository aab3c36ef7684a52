#!/bin/sh
# cli_trace_peers: output.trace_peers (doc/overlap.md, "Per-peer trace").
# At P = 2, on host tables (whose transfers then go per peer instead of by
# all-to-all) and on device tables of the fake device (staged), the trace
# has, for every traced step, rank and peer, each chunk of the rows (rows0,
# rows1; with prefetch the next step's marks and late rows: tiny's rows all
# collide, so nothing goes ahead as pf) and of the gradients posted (send and
# receive), seen complete (send and receive), and the rows consumed, once
# a step (nothing after the window); every receive of the sender's
# n-th send completes after both were posted; bench/peer_timeline.py
# prints them. The losses with the trace on are identical to those with it
# off (prioritized, none, prefetch); on without output.trace is refused.
# Priority on a shared link (emb_output_hold): with prioritized, at every
# rank chunk 1's rows are posted only after chunk 0 was seen done, on host
# tables and on the fake device staged, and through CUDA IPC within the
# node (parallel.transport = copy-engine, kernel: the hand-offs traced per
# peer); with none, before (the check can fail); the losses identical.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
IN=$TOP_SRCDIR/input/tiny.in
COMMON="data.path=$T/tiny.h5 train.epochs=10 train.max_steps=8 train.log_every=1"
TR="output.trace_steps=4 output.trace_peers=on"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# check TRACE NAME [KINDS [DONE]]: the events of the 4 traced steps at P =
# 2 (one rank per peer): each kind posted once a step, no more (the
# window), seen done and the rows consumed as often (DONE = 3: prefetch's
# late rows, posted for the next step, complete and are consumed in it, the
# last step's after the window)
check() {
    if "$PY" - "$1" "${3:-rows0 rows1 grads0 grads1}" "${4:-4}" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
kinds = sys.argv[2].split()
ndone = int(sys.argv[3])
pe = [e for e in ev if e.get("cat") == "peer"]
bad = []
count = {}
for e in pe:
    a = e["args"]
    count[(e["tid"], a["ev"], a["kind"], a["peer"])] = \
        count.get((e["tid"], a["ev"], a["kind"], a["peer"]), 0) + 1
for r in (0, 1):
    p = 1 - r
    for kind in kinds:
        for what in ("post_send", "post_recv", "done_send", "done_recv"):
            if count.get((r, what, kind, p), 0) != (4 if what[:4] == "post" else ndone):
                bad.append(f"rank {r} {kind} {what} to/from {p}: {count.get((r, what, kind, p), 0)}")
        if count.get((r, "post_send", kind, p)) != count.get((p, "post_recv", kind, r)):
            bad.append(f"{kind}: sends {r}->{p} and receives at {p} differ in number")
    for kind in (k for k in kinds if k in ("rows0", "rows1", "late")):
        if count.get((r, "consumed", kind, -1), 0) != ndone:
            bad.append(f"rank {r}: {kind} consumed {count.get((r, 'consumed', kind, -1), 0)} times")
# the n-th receive at r from p completes after the n-th post on both sides
origin = {e["tid"]: e["args"]["origin_s"] * 1e6 for e in ev if e.get("ph") == "M"}
def times(r, what, kind, p):
    return [origin[r] + e["ts"] for e in pe if e["tid"] == r and e["args"]["ev"] == what
            and e["args"]["kind"] == kind and e["args"]["peer"] == p]
for r in (0, 1):
    p = 1 - r
    for kind in kinds:
        done, rp, sp = times(r, "done_recv", kind, p), times(r, "post_recv", kind, p), \
            times(p, "post_send", kind, r)
        for i, d in enumerate(done):
            if not (d >= rp[i] - 2 and d >= sp[i] - 2):  # us: the printed digits
                bad.append(f"rank {r} {kind} #{i}: done before posted")
if bad:
    print("; ".join(bad[:6]))
    sys.exit(1)
EOF
    then pass "$2: per-peer, per-chunk events"; else fail "$2: per-peer events missing or wrong"; fi
}

# order TRACE NAME WANT: at every rank, the n-th rows1 (both its sends and
# its receives) posted after the n-th rows0 was seen done (sends and
# receives) at that rank: WANT = after (prioritized and prefetch:
# emb_output_hold), or before it (none, which posts both chunks at once)
order() {
    if "$PY" - "$1" "$3" <<'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
held = sys.argv[2] == "after"
pe = [e for e in ev if e.get("cat") == "peer"]
bad, n = [], 0
for r in (0, 1):
    def t(what, kind):
        return sorted(e["ts"] for e in pe if e["tid"] == r and e["args"]["ev"] == what
                      and e["args"]["kind"] == kind)
    done0 = [max(a, b) for a, b in zip(t("done_send", "rows0"), t("done_recv", "rows0"))]
    post1 = [min(a, b) for a, b in zip(t("post_send", "rows1"), t("post_recv", "rows1"))]
    for i, (d, p) in enumerate(zip(done0, post1)):
        n += 1
        if (p < d) == held:
            bad.append(f"rank {r} step {i}: rows1 posted at {p:.0f} us, rows0 done at {d:.0f}")
if n == 0 or bad:
    print("; ".join(bad[:4]) or "no rows0/rows1 pairs")
    sys.exit(1)
EOF
    then pass "$2: chunk 1 posted $3 chunk 0 is done"; else fail "$2: chunk order"; fi
}

for ov in prioritized none; do
    run "off-$ov" 2 device.type=cpu parallel.overlap=$ov output.trace="$T/off-$ov.json"
    run "on-$ov" 2 device.type=cpu parallel.overlap=$ov output.trace="$T/on-$ov.json" $TR
    identical "host tables, $ov: trace_peers on vs off" "$T/off-$ov.jsonl" "$T/on-$ov.jsonl"
    check "$T/on-$ov.json" "host tables, $ov"
done
identical "host tables: prioritized (chunk 1 held) vs none" "$T/on-prioritized.jsonl" \
    "$T/on-none.jsonl"
order "$T/on-prioritized.json" "host tables, prioritized" after
order "$T/on-none.json" "host tables, none" before
# prefetch: the next step's rows (pf) and the late ones, consumed by the lookup
run off-prefetch 2 device.type=cpu parallel.overlap=prefetch output.trace="$T/off-pf.json"
run on-prefetch 2 device.type=cpu parallel.overlap=prefetch output.trace="$T/on-pf.json" $TR
identical "host tables, prefetch: trace_peers on vs off" "$T/off-prefetch.jsonl" "$T/on-prefetch.jsonl"
check "$T/on-pf.json" "host tables, prefetch" "grads0 grads1 mask"
check "$T/on-pf.json" "host tables, prefetch's late rows" late 3
grep -q '"cat":"peer"' "$T/off-prioritized.json" && fail "peer events without trace_peers" ||
    pass "no peer events when off"

export FREESCALE_FAKE_GPUS=fake0,fake1
D="device.type=fake embedding.placement=device"
run fake-off 2 $D output.trace="$T/fake-off.json"
run fake-on 2 $D output.trace="$T/fake-on.json" $TR
identical "fake device, staged: trace_peers on vs off" "$T/fake-off.jsonl" "$T/fake-on.jsonl"
check "$T/fake-on.json" "fake device, staged"
order "$T/fake-on.json" "fake device, staged" after
# within a node through CUDA IPC: the hand-offs are the per-peer events
run fake-ce-off 2 $D parallel.transport=copy-engine output.trace="$T/fake-ce-off.json"
run fake-ce-on 2 $D parallel.transport=copy-engine output.trace="$T/fake-ce-on.json" $TR
identical "fake device, copy-engine: trace_peers on vs off" "$T/fake-ce-off.jsonl" \
    "$T/fake-ce-on.jsonl"
identical "fake device, copy-engine vs staged" "$T/fake-off.jsonl" "$T/fake-ce-off.jsonl"
check "$T/fake-ce-on.json" "fake device, copy-engine (IPC hand-offs)"
order "$T/fake-ce-on.json" "fake device, copy-engine" after
run fake-k-on 2 $D parallel.transport=kernel output.trace="$T/fake-k-on.json" $TR
identical "fake device, kernel vs staged" "$T/fake-off.jsonl" "$T/fake-k-on.jsonl"
order "$T/fake-k-on.json" "fake device, kernel" after

if "$PY" "$TOP_SRCDIR/bench/peer_timeline.py" "$T/on-prioritized.json" 3 > "$T/tl" 2>&1 &&
    grep -q '^  rows0 *r1 ' "$T/tl" && grep -q '^  rows1 *r0 ' "$T/tl"; then
    pass "peer_timeline prints each peer's chunks"
else
    fail "peer_timeline: $(head -c 400 "$T/tl")"
fi

expect_error "output.trace_peers = on needs output.trace" \
    "$FS" train "$IN" $COMMON device.type=cpu output.trace_peers=on
finish
