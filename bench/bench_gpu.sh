#!/bin/sh
# bench_gpu: HSTU training throughput on the GPU at the ML-20M configuration
# (input/ml20m-hstu.in: d = 256, 4 blocks, 4 heads, max length 200, 128
# sampled negatives) on synthetic data of ML-20M's shape, against the
# device's matrix peak measured in the same invocation (bench/bench_gemm:
# an 8192^3 float GEMM through the backend, TF32 off and on).
#
#   bench/bench_gpu.sh [STEPS]     (default 60; needs a CUDA build and a GPU)
#   (FREESCALE, BENCH_GEMM: the programs; PY: a Python with h5py)
#
# Prints the median tokens/s over the progress intervals (the first dropped)
# for 1 rank on the GPU with host and with device tables
# (embedding.placement), 1 rank with device.precision=tf32 and =bf16, and 2
# ranks sharing the GPU (device.share=on) with either placement; the model
# FLOPs per token (forward + backward = 3 x forward, with the mean causal span
# of the data), the fraction of the measured fp32 / tf32 GEMM peak and the
# ratio of device to host tables; then an embedding-heavy case (10^7 rows x d
# = 128, 2 ranks sharing the GPU): looked-up rows per second (130 per token:
# input, target, 128 negatives) and lookup + backward + update ms per step.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "bench_gpu: $FS not built"; exit 1; }
STEPS=${1:-60}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-gpu.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
GEMM=${BENCH_GEMM:-$TOP/bench/bench_gemm}
[ -x "$GEMM" ] || make -C "$TOP" bench/bench_gemm >/dev/null 2>&1 ||
    { echo "bench_gpu: cannot build bench_gemm"; exit 1; }
"$GEMM" cuda 8192 > "$W/peak"
rc=$?
cat "$W/peak"
[ $rc -eq 0 ] || { echo "bench_gpu: skipped (no usable GPU or no CUDA build)"; exit 0; }
FP32=$(awk '$2 == "fp32" { print $3 }' "$W/peak")
TF32=$(awk '$2 == "tf32" { print $3 }' "$W/peak")

# ML-20M's shape: 138k users, 26.7k items, ~20M ratings; a 20k-user sample
"$FS" data gen --users 20000 --items 26744 --length lognormal:4.4,1.1 --timestamps --seed 7 \
    -o "$W/ml20m-shape.h5" >/dev/null || exit 1
SPAN=$("${PY:-/usr/bin/python3}" -c "
import h5py, numpy as np
o = h5py.File('$W/ml20m-shape.h5', 'r')['offsets'][:]
L = np.minimum(np.diff(o) - 1, 200).clip(0)
print(float((L * L).sum()) / L.sum())" 2>/dev/null || echo 200)
D=256
# forward FLOPs per token x 3: uvqk (d x 4d), output (d x d), attention 2 x span x d,
# 129 scores of the loss
FPT=$(awk -v d=$D -v s="$SPAN" 'BEGIN { print 3 * (4 * (2*4*d*d + 2*d*d + 2*2*s*d) + 2*d*129) }')
echo "data: ML-20M shape (20000 users), mean causal span $(printf '%.1f' "$SPAN"); $(awk -v f="$FPT" 'BEGIN { printf "%.1f", f / 1e6 }') MFLOP per token"

run() { # NAME NP OVERRIDES...
    name=$1 np=$2; shift 2
    # unbound: each rank's host threads (the embedding path) get the cores
    mpirun --bind-to none -np "$np" "$FS" train "$TOP/input/ml20m-hstu.in" data.path="$W/ml20m-shape.h5" \
        device.type=cuda train.max_steps="$STEPS" train.log_every=10 train.final_eval=off \
        output.metrics="$W/m.jsonl" "$@" > "$W/log" 2>&1 ||
        { echo "bench_gpu: $name failed:"; tail -n 20 "$W/log"; return; }
    TPS=$(sed -n 's/.*"event":"train".*"tokens_per_s":\([^,}]*\).*/\1/p' "$W/m.jsonl" | tail -n +2 |
        sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    awk -v n="$name" -v t="$TPS" -v f="$FPT" -v p="$FP32" -v q="$TF32" 'BEGIN {
        g = t * f / 1e9
        printf "%-22s %10.0f tokens/s %9.0f GFLOP/s  %5.1f%% of fp32 peak  %5.1f%% of tf32 peak\n",
            n, t, g, 100 * g / p, 100 * g / q }' | tee -a "$W/results"
}
run "1 rank" 1 embedding.placement=host
run "1 rank, device tables" 1 embedding.placement=device
run "1 rank, tf32" 1 device.precision=tf32 embedding.placement=host
run "1 rank, bf16" 1 device.precision=bf16 embedding.placement=host
run "2 ranks sharing" 2 device.share=on embedding.placement=host
run "2 sharing, device tab." 2 device.share=on embedding.placement=device
# the tokens/s figure is the field before "tokens/s" (the names have spaces)
awk '{ for (i = 2; i <= NF; i++) if ($i == "tokens/s") t = $(i - 1) }
     /^1 rank  / { h = t } /^1 rank, device tables/ { d = t }
     END { if (h > 0 && d > 0) printf "device tables / host tables (1 rank): %.2fx tokens/s\n", d / h
           else print "device tables / host tables: not measured (a run failed)" }' "$W/results"

# The embedding-heavy case: 10^7 rows x d = 128, 2 ranks sharing the GPU;
# looked-up rows per second and the embedding path's time per step (the
# read with its negatives and de-duplication, the lookup, forward + loss,
# backward, gradient exchange and update), host against device tables.
"$FS" data gen --users 20000 --items 10000000 --length lognormal:4.4,1.1 --zipf 0.8 --seed 9 \
    -o "$W/heavy.h5" >/dev/null || exit 1
heavy() { # NAME PLACEMENT
    mpirun --bind-to none -np 2 "$FS" train "$TOP/input/ml20m-hstu.in" data.path="$W/heavy.h5" \
        device.type=cuda device.share=on model.dim=128 model.layers=1 embedding.placement="$2" \
        train.max_steps="$STEPS" train.log_every=10 train.final_eval=off \
        output.metrics="$W/h.jsonl" > "$W/log" 2>&1 ||
        { echo "bench_gpu: heavy $1 failed:"; tail -n 20 "$W/log"; return; }
    # fields by name (their order in the line is not relied on), then medians
    grep '"event":"train"' "$W/h.jsonl" | tail -n +2 | awk '
        function field(k,   s) { s = $0; if (!sub(".*\"" k "\":", "", s)) return 0; sub("[,}].*", "", s); return s + 0 }
        { print field("tokens_per_s"), field("read_ms") + field("input_dist_ms") + field("lookup_ms") +
                field("forward_ms") + field("backward_ms") + field("grad_exchange_ms") }' > "$W/h.cols"
    med() { cut -d' ' -f"$1" "$W/h.cols" | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
    awk -v n="$1" -v t="$(med 1)" -v l="$(med 2)" -v r=130 'BEGIN {
        printf "%-22s %12.0f looked-up rows/s  %8.1f ms read+dedup+lookup+forward+backward+update per step\n",
            n, t * r, l }'
}
heavy "heavy, host tables" host
heavy "heavy, device tables" device
