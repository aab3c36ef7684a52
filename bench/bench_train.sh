#!/bin/sh
# bench_train: training throughput of the ML-1M configurations on data of
# ML-1M's shape (6040 users, 3416 items, lognormal lengths: ~1.0e6 events,
# ~660k tokens per epoch after truncation to 200), on 2 ranks, out of the
# box (no environment variables).
#
#   bench/bench_train.sh [STEPS]      (default 48 steps = one epoch of 6040/128)
#
# For SASRec (BCE, ml1m-sasrec.in) and HSTU (sampled softmax with 128
# negatives, ml1m-hstu.in) it prints the median tokens/s over the progress
# intervals of the run (the first left out: start-up), the seconds per
# epoch-equivalent (660k tokens) at that rate, the whole run's wall seconds,
# the median achieved GFLOP/s and MFU the trainer reports (its model FLOP
# count against the gemm peak it measures at start-up; doc/training.md) and
# the peak RSS of a rank.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "bench_train: $FS not built"; exit 1; }
STEPS=${1:-48}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-train.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none

"$FS" data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps --seed 3 \
    -o "$W/ml1m-shape.h5" >/dev/null || exit 1
echo "machine: $(nproc) CPUs, $(date -u +%F); data: ML-1M shape; $STEPS steps per run"

median() { # FIELD: the median of a numeric field over the train events, the first left out
    sed -n 's/.*"event":"train".*"'"$1"'":\([^,}]*\).*/\1/p' "$W/m.jsonl" | sed 1d | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'
}

run() { # NAME INPUT OVERRIDES...
    name=$1 in=$2; shift 2
    rm -f "$W/m.jsonl"
    t0=$(date +%s.%N)
    /usr/bin/time -f %M -o "$W/rss" mpirun -np 2 "$FS" train "$TOP/input/$in" \
        data.path="$W/ml1m-shape.h5" train.max_steps="$STEPS" train.log_every=4 \
        train.final_eval=off output.metrics="$W/m.jsonl" "$@" > "$W/log" 2>&1 ||
        { echo "bench_train: $name failed:"; tail -n 20 "$W/log"; return; }
    wall=$(echo "$t0 $(date +%s.%N)" | awk '{ printf "%.2f", $2 - $1 }')
    awk -v n="$name" -v t="$(median tokens_per_s)" -v g="$(median gflops)" \
        -v m="$(median mfu)" -v w="$wall" -v r="$(awk '{ printf "%.0f", $1 / 1024 }' "$W/rss")" 'BEGIN {
        printf "%-8s %9.0f tokens/s  %5.2f s/epoch (660k tokens)  run %6.2f s  %7.1f GFLOP/s  MFU %4.1f%%  peak RSS %s MiB (one rank)\n",
            n, t, (t > 0 ? 660000 / t : 0), w, g, 100 * m, r }'
}
run sasrec ml1m-sasrec.in
run hstu ml1m-hstu.in
