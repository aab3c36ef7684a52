#!/bin/sh
# scaling: 'freescale plan --net' checked against a namespace cluster
# (scripts/cluster.sh, as root): one rank per node, every link limited to
# SCALING_RATE (tc's units; default 200mbit) each way, so that the wire time
# is real. Weak scaling, 48 sequences per rank and step, on 2 and 4 nodes
# (SCALING_NODES), the overlap modes none, prioritized and prefetch run
# interleaved after a discarded warm-up.
#
#   bench/scaling.sh [STEPS] [ROUNDS]     (default 30 steps, 1 round;
#                                         SCALING_KEEP=1 keeps the files)
#   SCALING_FROM=DIR bench/scaling.sh     the model against the runs kept in
#                                         DIR, without running them again
#
# The model's inputs, all from this machine: the cost model from 'freescale
# calibrate' (microseconds per sequence), scaled by the 2-node none run's
# busy time against its prediction (the host work outside the model, other
# work on the machine) and multiplied by ranks / cores when the nodes'
# ranks outnumber the machine's cores (they share them); the link rate and,
# as the per-message latency, the median round trip of one byte over TCP
# between two nodes; the exchange's bytes per token from the 2-node none
# run (--exchange); the share of overlappable communication that the modes
# hide (--hide) fitted on the 2-node prioritized run; prefetch's collision
# share (--collision) measured in the 2-node prefetch run. The 2-node rows
# are thus fitted (none's step time and prioritized's exposed time
# exactly), the 4-node rows predicted. Prints per node count and mode the
# measured and predicted exposed communication and step time (medians over
# the progress intervals, the first of each run dropped) and their ratios.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "scaling: $FS not built"; exit 1; }
if [ "$(id -u)" -ne 0 ] || ! ip netns add fs-scaling-probe 2>/dev/null; then
    echo "scaling: skipped: needs root and network namespaces (scripts/cluster.sh)"
    exit 0
fi
ip netns del fs-scaling-probe
STEPS=${1:-30}
ROUNDS=${2:-1}
RATE=${SCALING_RATE:-200mbit}
NODES=${SCALING_NODES:-2 4}
MODES="none prioritized prefetch"
PER_RANK=48
CL=$TOP/scripts/cluster.sh
field() { sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
stat() { # NODES MODE FIELD
    for f in "$W/$1-$2"-[0-9]*.jsonl; do [ -f "$f" ] && field "$f" "$3" | tail -n +2; done | median
}
step_ms() { # NODES MODE: from samples/s
    s=$(stat "$1" "$2" samples_per_s)
    awk -v s="$s" -v b=$((PER_RANK * $1)) 'BEGIN { printf "%.3f", 1000 * b / s }'
}
analyse() {
    # plan at NODES ranks, one per node; the cost model scaled when the ranks
    # share the cores; prints "exposed none prio prefetch step none prio prefetch"
    predict() { # NODES HIDE
        f=$(awk -v n="$1" -v c="$CORES" -v k="$SCALE" 'BEGIN { print k * (n > c ? n / c : 1) }')
        cm=$(echo "$CM" | awk -F, -v f="$f" '{ printf "%g,%g,%g", $1 * f, $2 * f, $3 * f }')
        "$FS" plan "$W/sc.in" parallel.cost_model="$cm" --batch-per-rank $PER_RANK --ranks "$1" \
            --net "$RATE,${RTT}ms" --gpus-per-node 1 --exchange "$W/2-none-1.jsonl" \
            --exchange-ranks 2 --hide "$2" --collision "$COLL" > "$W/plan.txt" 2>&1 || { cat "$W/plan.txt"; exit 1; }
        awk -v n="$1" '$1 == n && NF == 12 { print $7, $8, $9, $10, $11, $12 }' "$W/plan.txt" | tail -n 1
    }
    # prefetch's late rows: the collision share measured in the 2-node run
    COLL=$(stat 2 prefetch collision)
    echo "collision (2 nodes, prefetch): $COLL"
    # the compute scale: calibrate's fastest runs against the 2-node none run's
    # busy time (step - exposed: what the other work on this machine and the
    # host-side work outside the model add), then hide: fitted so that the
    # 2-node prioritized run's exposed communication is predicted
    SCALE=1
    set -- $(predict 2 1)
    m_none=$(stat 2 none exposed_comm_ms) m_prio=$(stat 2 prioritized exposed_comm_ms)
    SCALE=$(awk -v pe="$1" -v ps="$4" -v me="$m_none" -v ms="$(step_ms 2 none)" 'BEGIN {
        k = ps > pe ? (ms - me) / (ps - pe) : 1; printf "%.3f", k }')
    echo "compute scale (fitted on 2 nodes, none): $SCALE x the calibrated cost model"
    set -- $(predict 2 1)
    e_none=$1 e_prio=$2
    HIDE=$(awk -v pn="$e_none" -v pp="$e_prio" -v mn="$m_none" -v mp="$m_prio" 'BEGIN {
        h = pn > pp ? (mn - mp) / (pn - pp) : 1; if (h < 0) h = 0; if (h > 1) h = 1; printf "%.3f", h }')
    echo "hide (fitted on 2 nodes, prioritized): $HIDE"
    echo
    printf '%5s %-12s %12s %12s %7s %10s %10s %7s\n' nodes mode "exposed ms" "predicted" ratio \
        "step ms" predicted ratio
    for n in $NODES; do
        set -- $(predict "$n" "$HIDE")
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
}
if [ -n "${SCALING_FROM:-}" ]; then
    W=$SCALING_FROM
    . "$W/inputs" || exit 1
    analyse
    exit 0
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-scaling.XXXXXX") || exit 1
export FREESCALE_CLUSTER_DIR=$W/cluster
trap '"$CL" down >/dev/null 2>&1; [ -n "${SCALING_KEEP:-}" ] && echo "kept $W" || rm -rf "$W"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
max=0
for n in $NODES; do [ "$n" -gt "$max" ] && max=$n; done
"$CL" up "$max" --rate "$RATE" > "$W/up.log" 2>&1 || { cat "$W/up.log"; exit 1; }

"$FS" data gen --users 4096 --items 1000000 --length uniform:40,160 --zipf 0.8 --seed 5 \
    -o "$W/data.h5" >/dev/null || exit 1
cat > "$W/sc.in" <<IN
[data]
path = $W/data.h5
max_seq_len = 128
[model]
type = hstu
dim = 64
layers = 2
heads = 2
dropout = 0
[train]
negatives = 32
epochs = 100
log_every = 5
final_eval = off
[embedding]
optimizer = adagrad
IN
CORES=$(nproc)
echo "machine: $CORES CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $(cut -d' ' -f1-3 /proc/loadavg)"
"$FS" calibrate "$W/sc.in" --reps 3 > "$W/cal.txt" 2>&1 || { cat "$W/cal.txt"; exit 1; }
CM=$(sed -n 's/^cost_model = //p' "$W/cal.txt")
[ -n "$CM" ] || { echo "scaling: no cost model from calibrate"; cat "$W/cal.txt"; exit 1; }
# the round trip of one byte over TCP between nodes 1 and 2 (median of 200)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
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

run() { # NODES MODE TAG
    head -n "$1" "$W/cluster/hostfile" | sed 's/slots=.*/slots=1/' > "$W/hosts$1"
    "$CL" mpirun --hostfile "$W/hosts$1" -np "$1" --map-by node "$FS" train "$W/sc.in" \
        train.batch_size=$((PER_RANK * $1)) parallel.overlap="$2" train.max_steps="$STEPS" \
        output.metrics="$W/$1-$2-$3.jsonl" > "$W/log" 2>&1 ||
        { echo "scaling: $1 nodes, $2 failed:"; tail -n 20 "$W/log"; exit 1; }
}
echo "CM='$CM' RTT='$RTT' CORES='$CORES' RATE='$RATE' NODES='$NODES' STEPS='$STEPS' ROUNDS='$ROUNDS'" > "$W/inputs"
for n in $NODES; do
    run "$n" none warmup
    for r in $(seq "$ROUNDS"); do
        for m in $MODES; do run "$n" "$m" "$r"; done
    done
done

analyse
