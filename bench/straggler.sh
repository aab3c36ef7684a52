#!/bin/sh
# straggler: what parallel.balance_adapt does about a slow node, on 2 nodes
# of scripts/cluster.sh (as root), one rank each, TCP between them.
#
#   bench/straggler.sh [STEPS] [ROUNDS]     (default 24 steps, 2 rounds)
#   STRAGGLER_RATE=200mbit                  the links' rate (tc's units)
#   STRAGGLER_SLOW=20mbit                   node2's link when it is the slow one
#
# Five cases, interleaved (each once per round):
#   even              both links at RATE, both ranks at full speed
#   slow-link         node2's link at SLOW (a tenth by default)
#   slow-link+adapt   the same with parallel.balance_adapt = on
#   slow-cpu          both links at RATE, rank 1 computing 3x slower
#                     (debug.slow_rank = 1:3)
#   slow-cpu+adapt    the same with parallel.balance_adapt = on
#   slow-link+int8    slow-link with fewer bytes on the wire: rows as int8,
#                     gradients as bf16 (parallel.rows_codec, grads_codec)
#   slow-link+group1  slow-link with a replica of the table per node
#                     (parallel.embedding_group = 1: no rows cross the link,
#                     only the sparse gradients' reduction)
# Per case, medians over the progress intervals (the first two of a run
# dropped: adapt learns over the first): step ms, the bubble fraction
# (sum over ranks of the slowest rank's step time less the rank's busy
# compute, over P times the step: it counts the time spent waiting inside
# MPI), the imbalance of busy compute (max / mean), the exposed
# communication, the bytes of rows and gradients that cross the link per
# step (both ranks; with embedding_group = 1 the replicas' gradient
# reduction is not counted there), and whether adapt re-weighted the
# ranks. Never
# asserted: the machine's load shows in the spread.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "straggler: $FS not built"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "straggler: skipped (needs root for scripts/cluster.sh)"; exit 0; }
STEPS=${1:-24}
ROUNDS=${2:-2}
RATE=${STRAGGLER_RATE:-200mbit} SLOW=${STRAGGLER_SLOW:-20mbit}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-straggler.XXXXXX") || exit 1
CL=$TOP/scripts/cluster.sh
export FREESCALE_CLUSTER_DIR=$W/cluster
trap '"$CL" down >/dev/null 2>&1; rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
"$CL" up 2 --rate "$RATE" > "$W/up.log" 2>&1 || { cat "$W/up.log"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
LAUNCH="$CL mpirun --hostfile $W/cluster/hostfile -np 2 --map-by node"

"$FS" data gen --users 4096 --items 200000 --length uniform:20,120 --zipf 0.8 --seed 5 \
    -o "$W/d.h5" >/dev/null || exit 1
cat > "$W/s.in" <<IN
[data]
path = $W/d.h5
max_seq_len = 96
[model]
type = hstu
dim = 64
layers = 2
heads = 2
dropout = 0
[train]
batch_size = 64
negatives = 16
epochs = 100
log_every = 2
final_eval = off
[embedding]
optimizer = adagrad
IN
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
echo "2 nodes of scripts/cluster.sh, one rank each; links $RATE (node2 $SLOW when slow);" \
    "4096 users, 2e5 items, d = 64, HSTU 2 layers, batch 64, 16 negatives;" \
    "$STEPS steps per run, $ROUNDS runs per case"

CASES="even slow-link slow-link+adapt slow-cpu slow-cpu+adapt slow-link+int8 slow-link+group1"
run() { # CASE ROUND
    case $1 in slow-link*) "$CL" rate 2 "$SLOW" >/dev/null ;; *) "$CL" rate 2 "$RATE" >/dev/null ;; esac
    extra=
    case $1 in *+adapt) extra="parallel.balance_adapt=on" ;; esac
    case $1 in slow-cpu*) extra="$extra debug.slow_rank=1:3" ;; esac
    case $1 in *+int8) extra="parallel.rows_codec=int8 parallel.grads_codec=bf16" ;; esac
    case $1 in *+group1) extra="parallel.embedding_group=1" ;; esac
    # shellcheck disable=SC2086
    $LAUNCH "$FS" train "$W/s.in" train.max_steps="$STEPS" output.metrics="$W/$1-$2.jsonl" \
        $extra > "$W/$1-$2.log" 2>&1 || { echo "straggler: $1 failed:"; tail -n 20 "$W/$1-$2.log"; exit 1; }
}
for r in $(seq "$ROUNDS"); do
    for c in $CASES; do run "$c" "$r"; done
done
field() { sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
stat() { # CASE FIELD
    for f in "$W/$1"-[0-9]*.jsonl; do [ -f "$f" ] && field "$f" "$2" | tail -n +3; done | median
}
printf '%-16s %8s %7s %9s %11s %12s %7s\n' case "step ms" bubble imbalance "exposed ms" \
    "xnode MB/st" adapted
for c in $CASES; do
    s=$(stat "$c" interval_s) b=$(stat "$c" bubble) i=$(stat "$c" imbalance)
    e=$(stat "$c" exposed_comm_ms) x=$(stat "$c" rows_bytes_xnode) g=$(stat "$c" grads_bytes_xnode)
    a=$(cat "$W/$c"-[0-9]*.log | grep -c "rank speeds updated")
    awk -v c="$c" -v s="$s" -v b="$b" -v i="$i" -v e="$e" -v x="$x" -v g="$g" -v a="$a" 'BEGIN {
        printf "%-16s %8.0f %6.0f%% %9.2f %11.0f %12.2f %7s\n", c, 1000 * s / 2, 100 * b, i, e,
            (x + g) / 1e6, (a > 0 ? "yes" : "no") }'
done
