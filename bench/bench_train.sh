#!/bin/sh
# bench_train: training throughput of the ML-1M configurations on data of
# ML-1M's shape (6040 users, 3416 items, lognormal lengths: ~1.0e6 events,
# ~660k tokens per epoch after truncation to 200), on 2 ranks, out of the
# box (no environment variables).
#
#   bench/bench_train.sh [STEPS]      (default 47 steps = one epoch of 6040/128)
#
# For SASRec (BCE, ml1m-sasrec.in) and HSTU (sampled softmax with 128
# negatives, ml1m-hstu.in) it prints the median tokens/s over the progress
# intervals of the run, the seconds per epoch-equivalent (660k tokens), the
# peak RSS per rank, the FLOPs per token (a model count: forward + backward
# = 3 x forward) and the fraction of this machine's sgemm peak measured in
# the same invocation (bench/bench_blas, 2 threads).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "bench_train: $FS not built"; exit 1; }
STEPS=${1:-47}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-train.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none

"$FS" data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps --seed 3 \
    -o "$W/ml1m-shape.h5" >/dev/null || exit 1
PY=/usr/bin/python3
# mean attention span per token after truncation: sum L^2 / sum L over the training inputs
SPAN=$("$PY" -c "
import h5py, numpy as np
o = h5py.File('$W/ml1m-shape.h5', 'r')['offsets'][:]
L = np.minimum(np.diff(o) - 2, 200).clip(0)
print(float((L * L).sum()) / L.sum())" 2>/dev/null || echo 200)

PEAK=n/a
if make -C "$TOP" bench/bench_blas >/dev/null 2>&1; then
    PEAK=$("$TOP/bench/bench_blas" 1024 | awk '/freescale.s choice/ { print $4 }')
fi
echo "machine: $(nproc) CPUs; sgemm peak (1024^3, 2 threads, chosen kernels): $PEAK GFLOP/s"
echo "data: ML-1M shape, mean causal span per token $(printf '%.1f' "$SPAN")"

run() { # NAME INPUT FLOPS_PER_TOKEN OVERRIDES...
    name=$1 in=$2 fpt=$3; shift 3
    /usr/bin/time -f %M -o "$W/rss" mpirun -np 2 "$FS" train "$TOP/input/$in" \
        data.path="$W/ml1m-shape.h5" train.max_steps="$STEPS" train.log_every=8 \
        output.metrics="$W/m.jsonl" "$@" > "$W/log" 2>&1 ||
        { echo "bench_train: $name failed:"; tail -n 20 "$W/log"; return; }
    TPS=$(sed -n 's/.*"event":"train".*"tokens_per_s":\([^,}]*\).*/\1/p' "$W/m.jsonl" | sort -g |
        awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    RSS=$(awk '{ printf "%.0f", $1 / 1024 }' "$W/rss")
    awk -v n="$name" -v t="$TPS" -v f="$fpt" -v p="$PEAK" -v r="$RSS" 'BEGIN {
        g = t * f / 1e9
        printf "%-8s %9.0f tokens/s  %5.1f s/epoch (660k tokens)  %6.1f kFLOP/token  %6.1f GFLOP/s", n, t, 660000 / t, f / 1e3, g
        if (p + 0 > 0) printf "  %4.1f%% of sgemm peak", 100 * g / p
        printf "  peak RSS %s MiB (one rank)\n", r }'
}
# FLOPs per token, forward x 3: d = 50, 2 layers
D=50
SAS=$(awk -v d=$D -v s="$SPAN" 'BEGIN { print 3 * (2 * (8*d*d + 4*d*d + 2*s*d) + 4*d) }')
HSTU=$(awk -v d=$D -v s="$SPAN" 'BEGIN { print 3 * (2 * (8*d*d + 2*d*d + 2*s*d) + 2*d*129) }')
run sasrec ml1m-sasrec.in "$SAS"
run hstu ml1m-hstu.in "$HSTU"
