#!/bin/sh
# peers: the per-peer, per-chunk timeline of the embedding exchanges on a
# namespace cluster (scripts/cluster.sh, as root; doc/overlap.md,
# "Per-peer trace"): one rank per node, every link limited to PEERS_RATE
# each way, the configuration of bench/scaling.sh (48 sequences per rank,
# HSTU d = 64, 2 layers, 32 negatives, 10^6 items). Per node count and mode
# two runs: one as always ("plain": host tables exchange by all-to-all,
# but for the rows of prioritized and prefetch, which go per peer) and one
# with output.trace_peers = on (per peer); the medians of their phases
# (lk wait: the lookup's time inside MPI, waiting for the rows),
# then bench/peer_timeline.py's picture of one step of the traced run.
#
#   bench/peers.sh [STEPS] [STEP]     (default 8 steps, the timeline of step 6)
#   PEERS_NODES="2 4 8"               node counts (default 2 4)
#   PEERS_RATE=500mbit                the links' rate (tc's units; default 500mbit)
#   PEERS_MODES="prioritized none"    the overlap modes (default prioritized)
#   PEERS_MCA="NAME=VALUE ..."        Open MPI parameters (OMPI_MCA_NAME) for an
#                                     extra traced prioritized run per node count
#   PEERS_ARGS="parallel.progress=thread"
#                                     settings added to every run
#   PEERS_KEEP=1                      keep the files (their directory is printed)
# It holds scripts/cluster.sh's lock while it runs and refuses to replace
# a cluster that is up.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "peers: $FS not built"; exit 1; }
if [ "$(id -u)" -ne 0 ] || ! ip netns add fs-peers-probe 2>/dev/null; then
    echo "peers: skipped: needs root and network namespaces (scripts/cluster.sh)"
    exit 0
fi
ip netns del fs-peers-probe
# the namespaces' names are the machine's: take turns with the tests and
# other runs through scripts/cluster.sh's lock (held until the end), and
# leave a cluster that is up alone
LOCK=${FREESCALE_CLUSTER_LOCK:-/run/lock/freescale-cluster.lock}
[ -d "${LOCK%/*}" ] || LOCK=/tmp/freescale-cluster.lock
if [ -z "${PEERS_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
    PEERS_LOCKED=1 FREESCALE_CLUSTER_LOCKED=1 exec flock -o "$LOCK" "$0" "$@"
fi
if ip netns list 2>/dev/null | grep -q '^fs-sw\b'; then
    echo "peers: a cluster is up (another run's: scripts/cluster.sh status); not replacing it"
    exit 1
fi
STEPS=${1:-8}
STEP=${2:-6}
RATE=${PEERS_RATE:-500mbit}
NODES=${PEERS_NODES:-2 4}
MODES=${PEERS_MODES:-prioritized}
PER_RANK=48
CL=$TOP/scripts/cluster.sh
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
. "$TOP/bench/cluster_bench.sh"
cluster_bench_up peers "${PEERS_KEEP:-}" 1
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1); load $(cut -d' ' -f1-3 /proc/loadavg); links $RATE each way; $STEPS steps"
field() { sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
# run NODES MODE TAG ARGS...: metrics in $W/NODES-MODE-TAG.jsonl
run() {
    rn=$1 rm=$2 rt=$3
    shift 3
    head -n "$rn" "$W/cluster/hostfile" | sed 's/slots=.*/slots=1/' > "$W/hosts$rn"
    "$CL" mpirun --hostfile "$W/hosts$rn" -np "$rn" --map-by node "$FS" train "$W/sc.in" \
        train.batch_size=$((PER_RANK * rn)) parallel.overlap="$rm" train.max_steps="$STEPS" \
        output.metrics="$W/$rn-$rm-$rt.jsonl" ${PEERS_ARGS:-} "$@" > "$W/log" 2>&1 ||
        { echo "peers: $rn nodes, $rm ($rt) failed:"; tail -n 20 "$W/log"; exit 1; }
    printf '  %-26s' "$rm ($rt)"
    for f in lookup_ms lookup_mpi_ms forward_ms backward_ms grad_exchange_ms exposed_comm_ms; do
        printf ' %8.1f' "$(field "$W/$rn-$rm-$rt.jsonl" "$f" | tail -n +3 | median)"
    done
    s=$(field "$W/$rn-$rm-$rt.jsonl" samples_per_s | tail -n +3 | median)
    awk -v s="$s" -v b=$((PER_RANK * rn)) 'BEGIN { printf " %8.1f\n", 1000 * b / s }'
}
TR="output.trace_steps=$STEPS output.trace_peers=on"
MBIT=$(echo "$RATE" | awk '/gbit$/ { print $0 * 1000; next } /mbit$/ { print $0 + 0; next } { print 0 }')
for n in $NODES; do
    echo
    echo "$n nodes: medians of steps 3-$STEPS, ms per step"
    echo "  run                          lookup  lk wait  forward backward grad_exch  exposed     step"
    for m in $MODES; do
        run "$n" "$m" plain
        run "$n" "$m" traced output.trace="$W/$n-$m.json" $TR
    done
    if [ -n "${PEERS_MCA:-}" ]; then
        (for kv in $PEERS_MCA; do export "OMPI_MCA_$kv"; done
         run "$n" prioritized mca output.trace="$W/$n-mca.json" $TR) || exit 1
    fi
    for m in $MODES ${PEERS_MCA:+mca}; do
        echo
        echo "--- $n nodes, $m, step $STEP (traced run):"
        "$PY" "$TOP/bench/peer_timeline.py" "$W/$n-$m.json" "$STEP" rows0,rows1 "$MBIT" || exit 1
    done
done
