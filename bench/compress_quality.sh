#!/bin/sh
# compress_quality: what a cheaper wire does to quality (doc/compression.md).
# HSTU on MovieLens latest-small (input/mls-hstu.in: d = 50, 2 layers,
# sampled softmax with 128 negatives, Adam on the table) trained with each
# wire codec on rows and gradients alike, and as subspace tables k8, k16
# (embedding.subspace_k = 8, 16; fp32 wire), SEEDS seeds each, the same steps
# and global batch; prints test HR@10 and NDCG@10 (mean and standard
# deviation over seeds) next to fp32's and whether each is at parity: the
# mean within one fp32 standard deviation or 1% relative of fp32's mean.
#
# usage: bench/compress_quality.sh [RATINGS.csv]
#   (default: ../shared/data/ml-latest-small/ratings.csv next to the repo)
# environment: FREESCALE (the program; default ./freescale, then the source
# tree's), SEEDS ("1 2 3"), EPOCHS (16), LEN (data.max_seq_len, 50), BATCH
# (64), CODECS ("fp32 bf16 fp16 fp8 int8 k8 k16"; fp32 first), NP (ranks per run,
# 1: the codec is applied on one rank too, every row being encoded).
#
# Sized for a shared 2-core machine: 21 runs of 16 epochs (160 steps of 64
# sequences) at max_seq_len 50, one rank and one BLAS thread each, about
# 20 s per run. The models are not trained to convergence at this budget;
# the table compares the codecs at equal steps. Nothing is asserted.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:-$here/../shared/data/ml-latest-small/ratings.csv}
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "compress_quality: set FREESCALE to the program" >&2; exit 2; }
SEEDS=${SEEDS:-1 2 3}
EPOCHS=${EPOCHS:-16}
LEN=${LEN:-50}
BATCH=${BATCH:-64}
CODECS=${CODECS:-fp32 bf16 fp16 fp8 int8 k8 k16}
NP=${NP:-1}
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-cquality.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
"$FS" data import --format csv "$DATA" -o "$W/mls.h5" > /dev/null

printf '# ml-latest-small, HSTU, %s epochs of %s sequences, max_seq_len %s, %s rank(s), seeds %s\n' \
    "$EPOCHS" "$BATCH" "$LEN" "$NP" "$SEEDS"
printf '| wire (rows + grads) | HR@10 | NDCG@10 | parity HR / NDCG | s / run |\n'
printf '|---|---|---|---|---|\n'
base=
for cd in $CODECS; do
    : > "$W/res"
    t0=$(date +%s)
    for seed in $SEEDS; do
        out="$W/$cd-$seed"
        case $cd in
            k*) flags="embedding.subspace_k=${cd#k}" ;;
            *) flags="parallel.rows_codec=$cd parallel.grads_codec=$cd" ;;
        esac
        # shellcheck disable=SC2086
        if ! mpirun -np "$NP" "$FS" train "$here/input/mls-hstu.in" data.path="$W/mls.h5" \
            data.max_seq_len="$LEN" train.batch_size="$BATCH" train.epochs="$EPOCHS" \
            train.eval_every=0 train.seed="$seed" train.log_every=1000 device.type=cpu \
            $flags output.metrics="$out.jsonl" \
            > "$out.log" 2>&1; then
            echo "compress_quality: $cd seed $seed failed:" >&2
            tail -5 "$out.log" >&2
            exit 1
        fi
        grep '"split":"test"' "$out.jsonl" |
            sed 's/.*"hr@10":\([^,]*\).*"ndcg@10":\([^,]*\).*/\1 \2/' >> "$W/res"
    done
    secs=$(( ($(date +%s) - t0) / $(echo $SEEDS | wc -w) ))
    # mean and sample standard deviation of both columns: "mh sdh mg sdg"
    stats=$(awk '{ h[NR] = $1; g[NR] = $2; sh += $1; sg += $2 } END {
        mh = sh / NR; mg = sg / NR
        for (i = 1; i <= NR; i++) { vh += (h[i] - mh) ^ 2; vg += (g[i] - mg) ^ 2 }
        sdh = NR > 1 ? sqrt(vh / (NR - 1)) : 0; sdg = NR > 1 ? sqrt(vg / (NR - 1)) : 0
        printf "%.6f %.6f %.6f %.6f", mh, sdh, mg, sdg }' "$W/res")
    [ -z "$base" ] && base=$stats
    echo "$cd $stats $base $secs" | awk '
        function par(m, b, sd) { d = m - b; if (d < 0) d = -d; return (d <= sd || d <= 0.01 * b) ? "yes" : "no" }
        { printf "| %s | %.4f ± %.4f | %.4f ± %.4f | %s / %s | %d |\n", $1, $2, $3, $4, $5,
            par($2, $6, $7), par($4, $8, $9), $10 }'
done
