#!/bin/sh
# scaling: 'freescale plan --net' checked against a namespace cluster
# (scripts/cluster.sh, as root): SCALING_PER_NODE ranks per node (default
# 1), every link limited to SCALING_RATE (tc's units: bit, kbit, mbit,
# gbit; default 200mbit) each way, so that the wire time is real. Weak
# scaling, 48 sequences per rank and step, on 2 and 4 nodes (SCALING_NODES),
# the overlap modes none, prioritized and prefetch run interleaved after a
# discarded warm-up. Holds scripts/cluster.sh's lock while it runs.
#
#   bench/scaling.sh [STEPS] [ROUNDS]     (default 30 steps, 1 round;
#                                         SCALING_KEEP=1 keeps the files)
#   SCALING_FROM=DIR bench/scaling.sh     the model against the runs kept in
#                                         DIR, without running them again
#   SCALING_RATE=1gbit                    a rate where the rows' wire time is
#                                         of the order of the compute (the
#                                         bound table's rows1 against fwd,
#                                         grads against bwd + host): 1gbit on
#                                         this 2-core VM (chunk 1's wire
#                                         140-210 ms against a forward of
#                                         100-190 ms at 2-4 nodes); at 200mbit
#                                         the wire dominates and no mode can
#                                         hide much
#   SCALING_NODES="2 4 8"                 node counts (the first is the one the
#                                         inputs below are measured on)
#   SCALING_FIT="2 4"                     the node counts whose none runs fit
#                                         the network's two terms (default the
#                                         first two of SCALING_NODES)
#
# The model's inputs, all from this machine: the cost model from 'freescale
# calibrate' (microseconds per sequence), scaled by the 2-node none run's
# busy time against its prediction (the host work outside the model, other
# work on the machine) and multiplied by ranks / cores when the ranks
# outnumber the machine's cores (they share them); the split of that
# compute into forward, backward and host work (--split) from the 2-node
# none run's phases; the exchange's bytes per token from the 2-node none
# run (--exchange); prefetch's collision share (--collision) measured in
# the 2-node prefetch run; the link's rate (per rank: a node's rate / G);
# and the network model's two terms, the link's efficiency (--eff) and the
# per-message latency (--net RATE,LAT), fitted once by least squares on
# none's exposed time at the SCALING_FIT node counts (with one node count,
# the latency is the median round trip of one byte over TCP between two
# nodes and only the efficiency is fitted). Every mode's row at every node
# count is then predicted by the same terms (doc/scaling.md): none's rows
# at the fitted node counts are fits, the others predictions. Prints per
# node count and mode the measured and predicted exposed communication and
# step time (medians over the progress intervals, the first of each run
# dropped) and their ratios; then the bound (bench/bound.py, doc/overlap.md
# "The bound"): per run the wire time of its bytes on the busiest link by
# kind, the compute behind each and max(0, wire - compute) per phase summed,
# beside the measured exposed time.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "scaling: $FS not built"; exit 1; }
if [ "$(id -u)" -ne 0 ] || ! ip netns add fs-scaling-probe 2>/dev/null; then
    echo "scaling: skipped: needs root and network namespaces (scripts/cluster.sh)"
    exit 0
fi
ip netns del fs-scaling-probe
# the namespaces' names are the machine's: take turns with the tests and
# other runs through scripts/cluster.sh's lock (held until the end), and
# leave a cluster that is up alone
LOCK=${FREESCALE_CLUSTER_LOCK:-/run/lock/freescale-cluster.lock}
[ -d "${LOCK%/*}" ] || LOCK=/tmp/freescale-cluster.lock
if [ -z "${SCALING_FROM:-}" ] && [ -z "${SCALING_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
    SCALING_LOCKED=1 FREESCALE_CLUSTER_LOCKED=1 exec flock -o "$LOCK" "$0" "$@"
fi
if [ -z "${SCALING_FROM:-}" ] && ip netns list 2>/dev/null | grep -q '^fs-sw\b'; then
    echo "scaling: a cluster is up (another run's: scripts/cluster.sh status); not replacing it"
    exit 1
fi
STEPS=${1:-30}
ROUNDS=${2:-1}
RATE=${SCALING_RATE:-200mbit}
NODES=${SCALING_NODES:-2 4}
G=${SCALING_PER_NODE:-1}
MODES="none prioritized prefetch"
PER_RANK=48
CL=$TOP/scripts/cluster.sh
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
field() { sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
stat() { # NODES MODE FIELD
    for f in "$W/$1-$2"-[0-9]*.jsonl; do [ -f "$f" ] && field "$f" "$3" | tail -n +2; done | median
}
step_ms() { # NODES MODE: from samples/s
    s=$(stat "$1" "$2" samples_per_s)
    awk -v s="$s" -v b=$((PER_RANK * $1 * ${G:-1})) 'BEGIN { printf "%.3f", 1000 * b / s }'
}
analyse() {
    # plan at NODES x G ranks, G per node; the cost model scaled when the
    # ranks share the cores; the link's rate shared by a node's G ranks;
    # prints "exposed none prio prefetch step none prio prefetch"
    predict() { # NODES EFF LAT_MS (0: none)
        np=$(($1 * G))
        f=$(awk -v n="$np" -v c="$CORES" -v k="$SCALE" 'BEGIN { print k * (n > c ? n / c : 1) }')
        cm=$(echo "$CM" | awk -F, -v f="$f" '{ printf "%g,%g,%g", $1 * f, $2 * f, $3 * f }')
        lat=$(awk -v l="$3" 'BEGIN { if (l > 0) printf ",%gms", l }')
        "$FS" plan "$W/sc.in" parallel.cost_model="$cm" --batch-per-rank $PER_RANK --ranks "$np" \
            --net "$BPS$lat" --eff "$2" --split "$SPLIT" --gpus-per-node "$G" \
            --exchange "$W/2-none-1.jsonl" --exchange-ranks $((2 * G)) --collision "$COLL" \
            > "$W/plan.txt" 2>&1 || { cat "$W/plan.txt"; exit 1; }
        awk -v n="$np" '$1 == n && NF == 13 { print $8, $9, $10, $11, $12, $13 }' "$W/plan.txt" | tail -n 1
    }
    G=${G:-1}
    # a node's link shared by its G ranks: the rate per rank in bytes/s
    BPS=$(echo "$RATE" | awk -v g="$G" '{ v = $0 + 0; u = $0; sub(/^[0-9.eE+-]+/, "", u)
        f = u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : u == "bit" || u == "" ? 1 : 0
        if (f == 0) exit 1; printf "%.0f", v * f / 8 / g }') ||
        { echo "scaling: rate $RATE: expected bit, kbit, mbit or gbit"; exit 1; }
    # prefetch's late rows: the collision share measured in the 2-node run
    COLL=$(stat 2 prefetch collision)
    echo "collision (2 nodes, prefetch): $COLL"
    # the split of the compute, from the 2-node none run (nothing waits in
    # its forward and backward): forward / busy, backward / busy, the rest
    # host work (busy = step - exposed)
    m_none=$(stat 2 none exposed_comm_ms)
    SPLIT=$(awk -v s="$(step_ms 2 none)" -v e="$m_none" -v f="$(stat 2 none forward_ms)" \
        -v b="$(stat 2 none backward_ms)" 'BEGIN { u = s - e; if (u <= 0 || f + b > u) u = f + b
        printf "%.4f,%.4f", f / u, b / u }')
    echo "compute split (2 nodes, none: forward, backward of the busy time): $SPLIT"
    # the compute scale: calibrate's fastest runs against the 2-node none run's
    # busy time (step - exposed: what the other work on this machine and the
    # host-side work outside the model add)
    SCALE=1
    set -- $(predict 2 1 0)
    SCALE=$(awk -v pe="$1" -v ps="$4" -v me="$m_none" -v ms="$(step_ms 2 none)" 'BEGIN {
        k = ps > pe ? (ms - me) / (ps - pe) : 1; printf "%.3f", k }')
    echo "compute scale (fitted on 2 nodes, none): $SCALE x the calibrated cost model"
    # the network's two terms, fitted once on none's exposed time at the node
    # counts SCALING_FIT (least squares over them): exposed = W / eff + L x
    # lat, W the wire time at the link's rate, L the latencies' count (plan
    # at eff 1 without and with 1 ms of latency)
    FIT=${SCALING_FIT:-$(echo $NODES | awk '{ print $1, ($2 == "" ? "" : $2) }')}
    pts=
    for n in $FIT; do
        set -- $(predict "$n" 1 0); w=$1
        set -- $(predict "$n" 1 1); l=$(awk -v a="$1" -v w="$w" 'BEGIN { print a - w }')
        pts="$pts $w $l $(stat "$n" none exposed_comm_ms)"
    done
    set -- $(echo "$pts" | awk -v rtt="$RTT" '{
        for (i = 1; i + 2 <= NF; i += 3) { w = $i; l = $(i + 1); e = $(i + 2)
            sww += w * w; sll += l * l; swl += w * l; swe += w * e; sle += l * e; k++ }
        d = sww * sll - swl * swl
        if (k >= 2 && d > 1e-12 * sww * sll) { a = (swe * sll - sle * swl) / d; b = (sle * sww - swe * swl) / d }
        else { b = rtt; a = (swe - b * swl) / sww }      # one node count: the latency measured
        if (b < 0) { b = 0; a = swe / sww }              # no negative latency
        if (a < 1) { a = 1; b = sll > 0 ? (sle - swl) / sll : 0; if (b < 0) b = 0 } # eff <= 1
        printf "%.4f %.4f\n", 1 / a, b }')
    EFF=$1 LAT=$2
    echo "fitted once on none at nodes $(echo $FIT): eff $EFF (of $RATE / $G per rank), latency $LAT ms per message"
    echo
    printf '%5s %-12s %12s %12s %7s %10s %10s %7s\n' nodes mode "exposed ms" "predicted" ratio \
        "step ms" predicted ratio
    for n in $NODES; do
        set -- $(predict "$n" "$EFF" "$LAT")
        i=0
        for m in $MODES; do
            i=$((i + 1))
            eval pe=\${$i} ps=\${$((i + 3))}
            me=$(stat "$n" $m exposed_comm_ms) ms=$(step_ms "$n" $m)
            awk -v n="$n" -v m=$m -v me="$me" -v pe="$pe" -v ms="$ms" -v ps="$ps" 'BEGIN {
                re = me > 0 ? pe / me : 0; rs = ms > 0 ? ps / ms : 0
                printf "%5d %-12s %12.1f %12.1f %7.2f %10.1f %10.1f %7.2f\n", n, m, me, pe, re, ms, ps, rs }'
        done
    done
    grep '^network model' "$W/plan.txt"
    echo "(ratio = predicted / measured; medians over the progress intervals; $STEPS steps, $ROUNDS round(s))"
    echo
    echo "the bound (bench/bound.py, doc/overlap.md \"The bound\"; ms per step; compute: none's forward and backward;"
    echo "at the link's rate, then at the rate x the fitted efficiency $EFF):"
    h=--header
    for n in $NODES; do
        cf=
        for f in "$W/$n-none"-[0-9]*.jsonl; do [ -f "$f" ] && cf="$cf --compute $f"; done
        for m in $MODES; do
            "$PY" "$TOP/bench/bound.py" --rate "$RATE" --ranks-per-node "$G" --label "$n $m" $h $cf \
                --eff "$EFF" \
                "$W/$n-$m"-[0-9]*.jsonl ||
                echo "scaling: no bound for $n nodes, $m"
            h=
        done
    done
}
if [ -n "${SCALING_FROM:-}" ]; then
    W=$SCALING_FROM
    . "$W/inputs" || exit 1
    analyse
    exit 0
fi
. "$TOP/bench/cluster_bench.sh"
cluster_bench_up scaling "${SCALING_KEEP:-}" 5
CORES=$(nproc)
echo "machine: $CORES CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $(cut -d' ' -f1-3 /proc/loadavg)"
"$FS" calibrate "$W/sc.in" --reps 3 > "$W/cal.txt" 2>&1 || { cat "$W/cal.txt"; exit 1; }
CM=$(sed -n 's/^cost_model = //p' "$W/cal.txt")
[ -n "$CM" ] || { echo "scaling: no cost model from calibrate"; cat "$W/cal.txt"; exit 1; }
# the round trip of one byte over TCP between nodes 1 and 2 (median of 200)
"$CL" run 2 "$PY" -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.18.0.12", 47999)); s.listen(1); c, _ = s.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
while True:
    b = c.recv(1)
    if not b: break
    c.sendall(b)' &
sleep 1
RTT=$("$CL" run 1 "$PY" -c '
import socket, time
c = socket.create_connection(("198.18.0.12", 47999)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
t = []
for i in range(200):
    t0 = time.perf_counter(); c.sendall(b"x"); c.recv(1); t.append(time.perf_counter() - t0)
t.sort(); print("%.4f" % (1e3 * t[len(t) // 2]))')
wait
[ -n "$RTT" ] || { echo "scaling: no round trip measured between the nodes"; exit 1; }
echo "cost model (calibrate, us per sequence): $CM; link $RATE each way; ping RTT $RTT ms"

run() { # NODES MODE TAG: G ranks per node
    head -n "$1" "$W/cluster/hostfile" | sed "s/slots=.*/slots=$G/" > "$W/hosts$1"
    "$CL" mpirun --hostfile "$W/hosts$1" -np $(($1 * G)) --map-by node "$FS" train "$W/sc.in" \
        train.batch_size=$((PER_RANK * $1 * G)) parallel.overlap="$2" train.max_steps="$STEPS" \
        output.metrics="$W/$1-$2-$3.jsonl" > "$W/log" 2>&1 ||
        { echo "scaling: $1 nodes, $2 failed:"; tail -n 20 "$W/log"; exit 1; }
}
echo "CM='$CM' RTT='$RTT' CORES='$CORES' RATE='$RATE' NODES='$NODES' STEPS='$STEPS' ROUNDS='$ROUNDS' G='$G'" > "$W/inputs"
for n in $NODES; do
    run "$n" none warmup
    for r in $(seq "$ROUNDS"); do
        for m in $MODES; do run "$n" "$m" "$r"; done
    done
done

analyse
