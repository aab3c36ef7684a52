#!/bin/sh
# overlap: parallel.overlap modes side by side on 2 ranks, on a
# communication-heavy configuration: 2*10^6 items, d = 128 (OVERLAP_DIM),
# 8192 users of 40..160 events (Zipf 0.8, up to 128 per sequence), HSTU
# with 2 layers and 64 sampled negatives per position: ~10^5 unique rows
# per rank and step, tens of MB of rows each way.
#
#   bench/overlap.sh [STEPS] [ROUNDS]     (default 40 steps, 2 rounds)
#   bench/overlap.sh --cluster [STEPS] [ROUNDS]
#                                         the 2 ranks on 2 nodes of
#                                         scripts/cluster.sh (as root), every
#                                         exchange over a link limited to
#                                         OVERLAP_RATE (tc's units; default
#                                         400mbit) each way: the wire time is
#                                         real, not a CPU copying inside MPI;
#                                         then per mode the bound beside the
#                                         exposed time (bench/bound.py: the
#                                         wire time per kind on the busiest
#                                         link, the compute behind it, max(0,
#                                         wire - compute) per phase summed;
#                                         doc/overlap.md, "The bound"). Pick a
#                                         rate where the rows' wire time is of
#                                         the order of the forward (the bound
#                                         table's rows1 against fwd): 1500mbit
#                                         on the 2-core VM (486 ms of chunk 1
#                                         against a 506 ms forward); at
#                                         400mbit the wire dominates, at 4gbit
#                                         the compute (every bound is then
#                                         chunk 0's few ms). Holds
#                                         scripts/cluster.sh's lock
#   OVERLAP_BTL=tcp bench/overlap.sh      the ranks talk over TCP loopback
#                                         instead of shared memory (a slower,
#                                         network-like transport)
#   OVERLAP_MODES="none pipeline prioritized prefetch prioritized+thread"
#                                         the modes (default: none prioritized
#                                         prefetch); +thread = parallel.progress=thread
#   OVERLAP_DIM=64                        the embedding width
#   OVERLAP_TRACE=4                       the last round's runs keep a trace
#                                         (output.trace) and step 4 of each
#                                         mode is printed as a per-phase
#                                         timeline (bench/trace_timeline.py)
#
# The modes run interleaved (each mode once per round) after one discarded
# warm-up run. Per mode it prints medians over the progress intervals of
# all its runs (the first interval of each run is dropped): the exposed
# communication per step (step time - busy compute time, mean over ranks;
# it includes waiting for a slower rank), its ratios to none and to
# prioritized, the overlap ratio (hidden / (hidden + exposed)
# communication time), the step time and its ratio to none, and with
# prefetch the collision fraction (next-step rows that this step's update
# touches / rows looked up).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "overlap: $FS not built"; exit 1; }
CLUSTER=0
[ "${1:-}" = --cluster ] && { CLUSTER=1; shift; }
if [ $CLUSTER = 1 ]; then
    # the namespaces' names are the machine's: take turns with the tests and
    # other runs through scripts/cluster.sh's lock (held until the end)
    LOCK=${FREESCALE_CLUSTER_LOCK:-/run/lock/freescale-cluster.lock}
    [ -d "${LOCK%/*}" ] || LOCK=/tmp/freescale-cluster.lock
    if [ -z "${OVERLAP_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
        OVERLAP_LOCKED=1 FREESCALE_CLUSTER_LOCKED=1 exec flock -o "$LOCK" "$0" --cluster "$@"
    fi
    if ip netns list 2>/dev/null | grep -q '^fs-sw\b'; then
        echo "overlap: a cluster is up (another run's: scripts/cluster.sh status); not replacing it"
        exit 1
    fi
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
STEPS=${1:-40}
ROUNDS=${2:-2}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-overlap.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
LAUNCH="mpirun -np 2"
if [ $CLUSTER = 1 ]; then
    CL=$TOP/scripts/cluster.sh RATE=${OVERLAP_RATE:-400mbit}
    export FREESCALE_CLUSTER_DIR=$W/cluster
    "$CL" up 2 --rate "$RATE" > "$W/up.log" 2>&1 || { cat "$W/up.log"; exit 1; }
    trap '"$CL" down >/dev/null 2>&1; rm -rf "$W"' EXIT
    LAUNCH="$CL mpirun --hostfile $W/cluster/hostfile -np 2 --map-by node"
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ -n "${OVERLAP_BTL:-}" ]; then
    export OMPI_MCA_btl="self,$OVERLAP_BTL"
fi

DIM=${OVERLAP_DIM:-128}
"$FS" data gen --users 8192 --items 2000000 --length uniform:40,160 --zipf 0.8 --seed 5 \
    -o "$W/big.h5" >/dev/null || exit 1
cat > "$W/ov.in" <<IN
[data]
path = $W/big.h5
max_seq_len = 128
[model]
type = hstu
dim = $DIM
layers = 2
heads = 2
dropout = 0
[train]
batch_size = 128
negatives = 64
epochs = 100
log_every = 5
final_eval = off
[embedding]
optimizer = adagrad
IN
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
if [ $CLUSTER = 1 ]; then
    where="2 nodes of scripts/cluster.sh, one rank each, TCP over links of $RATE each way"
else
    where="one node; MPI transport: ${OVERLAP_BTL:-default (shared memory)}"
fi
echo "data: 8192 users, 2e6 items, d = $DIM; 2 ranks, $STEPS steps per run, $ROUNDS runs per mode; $where"

MODES=${OVERLAP_MODES:-none prioritized prefetch}
run() { # MODE ROUND; MODE = OVERLAP[+thread]
    ov=${1%+thread} pr=test tr=
    [ "$ov" != "$1" ] && pr=thread
    [ -n "${OVERLAP_TRACE:-}" ] && [ "$2" = "$ROUNDS" ] && tr="output.trace=$W/$1.trace.json"
    $LAUNCH "$FS" train "$W/ov.in" parallel.overlap="$ov" parallel.progress=$pr $tr \
        train.max_steps="$STEPS" output.metrics="$W/$1-$2.jsonl" > "$W/log" 2>&1 ||
        { echo "overlap: $1 failed:"; tail -n 20 "$W/log"; exit 1; }
}
run none warmup
for r in $(seq "$ROUNDS"); do
    for m in $MODES; do run $m "$r"; done
done
# per interval: exposed ms, overlap, step ms (from samples/s at batch 128)
field() { sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
stat() { # MODE FIELD [step]
    for f in "$W/$1"-[0-9]*.jsonl; do [ -f "$f" ] && field "$f" "$2" | tail -n +2; done | median
}
base=$(stat none exposed_comm_ms) sbase=$(stat none samples_per_s)
pbase=$(stat prioritized exposed_comm_ms)
printf '%-20s %15s %8s %8s %8s %8s %8s %9s\n' mode "exposed ms/step" "vs none" "vs prio" \
    overlap "step ms" "vs none" collision
for m in $MODES; do
    e=$(stat $m exposed_comm_ms) o=$(stat $m overlap) s=$(stat $m samples_per_s)
    c=$(stat $m collision)
    awk -v m=$m -v e="$e" -v b="$base" -v pb="$pbase" -v o="$o" -v s="$s" -v sb="$sbase" -v c="$c" 'BEGIN {
        printf "%-20s %15.1f %8.2f %8s %7.0f%% %8.0f %8.2f %9s\n", m, e, e / b,
            pb == "nan" ? "-" : sprintf("%.2f", e / pb), 100 * o, 128000 / s, sb / s,
            c == "nan" ? "-" : sprintf("%.3f", c) }'
done
if [ $CLUSTER = 1 ]; then
    # the bound: none's forward and backward as the compute behind the wire
    echo
    echo "the bound (bench/bound.py; medians, ms per step; compute: none's forward and backward):"
    cf=
    for f in "$W"/none-[0-9]*.jsonl; do [ -f "$f" ] && cf="$cf --compute $f"; done
    h=--header
    for m in $MODES; do
        "$PY" "$TOP/bench/bound.py" --rate "$RATE" --label "$m" $h $cf \
            "$W/$m"-[0-9]*.jsonl || echo "overlap: no bound for $m"
        h=
    done
fi
if [ -n "${OVERLAP_TRACE:-}" ]; then
    for m in $MODES; do
        echo "$m, step $OVERLAP_TRACE of the last round:"
        "$PY" "$TOP/bench/trace_timeline.py" "$W/$m.trace.json" "$OVERLAP_TRACE" 60 ||
            echo "overlap: no timeline for $m"
    done
fi
