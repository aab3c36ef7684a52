#!/bin/sh
# bench/quality.sh: the quality table of doc/quality.md on MovieLens
# latest-small: test HR@10 and NDCG@10 (mean and standard deviation over
# seeds) of HSTU and SASRec trained with the sampled softmax (128 uniform
# negatives), the full softmax over all items, and in-batch / mixed
# negatives (logQ-corrected), all with the same steps and global batch and
# with the best-validation selection on (train.keep_best: the test line is
# that of the best validation NDCG@10; validated every EVAL_EVERY epochs).
#
# usage: bench/quality.sh [RATINGS.csv]
#   (default: ../shared/data/ml-latest-small/ratings.csv next to the repo)
# environment: FREESCALE (the program; default ./freescale, then the build
# tree's), SEEDS ("1 2 3"), EPOCHS (16), LEN (data.max_seq_len, 50), BATCH
# (64), EVAL_EVERY (2), MODELS ("hstu sasrec"), VARIANTS ("softmax full
# in_batch mixed"; also: shared = softmax with train.shared_negatives =
# SHARED, 64), NP (ranks per run, 1), KEEP (a directory to keep the metrics
# files in).
#
# Sized for a shared 2-core machine: one rank and one BLAS thread per run,
# 24 runs of 16 epochs (160 steps of 64 sequences) at max_seq_len 50: about
# 10 minutes of CPU in all (610 s measured on 2026-12-01; 17 minutes of wall
# time on the shared machine). The full-softmax runs are the dearest, ~5.5
# times a sampled-softmax run at ml-latest-small's 9.7k items. The models are
# not trained to convergence at this budget (validation still improves at
# the last epoch): the table compares the losses at equal steps. The
# figures are printed with the CPU seconds per run of each variant; nothing
# is asserted.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:-$here/../shared/data/ml-latest-small/ratings.csv}
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "quality.sh: set FREESCALE to the program" >&2; exit 2; }
SEEDS=${SEEDS:-1 2 3}
EPOCHS=${EPOCHS:-16}
LEN=${LEN:-50}
BATCH=${BATCH:-64}
EVAL_EVERY=${EVAL_EVERY:-2}
MODELS=${MODELS:-hstu sasrec}
VARIANTS=${VARIANTS:-softmax full in_batch mixed}
SHARED=${SHARED:-64}
NP=${NP:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-quality.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
"$FS" data import --format csv "$DATA" -o "$W/mls.h5" > /dev/null

# the loss flags of a variant; temperature: HSTU 0.05 (normalised rows),
# SASRec 1 (raw rows, the plain cross-entropy)
variant_flags() {
    case $1 in
        softmax) echo "train.loss=softmax train.negatives=128" ;;
        full) echo "train.loss=full" ;;
        in_batch) echo "train.loss=softmax train.negatives=128 train.negatives_from=in_batch" ;;
        mixed) echo "train.loss=softmax train.negatives=128 train.negatives_from=mixed" ;;
        shared) echo "train.loss=softmax train.negatives=128 train.shared_negatives=$SHARED" ;;
    esac
}

printf '# ml-latest-small, %s epochs of %s sequences, max_seq_len %s, seeds %s, best validation\n' \
    "$EPOCHS" "$BATCH" "$LEN" "$SEEDS"
printf '| model | loss | HR@10 | NDCG@10 | CPU s / run |\n|---|---|---|---|---|\n'
for model in $MODELS; do
    tau=0.05; [ "$model" = sasrec ] && tau=1
    for v in $VARIANTS; do
        : > "$W/res"
        : > "$W/cpu"
        for seed in $SEEDS; do
            out="$W/$model-$v-$seed"
            # shellcheck disable=SC2046
            if ! /usr/bin/time -a -o "$W/cpu" -f "%U %S" mpirun -np "$NP" "$FS" train "$here/input/mls-hstu.in" data.path="$W/mls.h5" \
                model.type="$model" data.max_seq_len="$LEN" train.batch_size="$BATCH" \
                train.epochs="$EPOCHS" train.eval_every="$EVAL_EVERY" train.temperature="$tau" \
                train.seed="$seed" train.keep_best=on output.checkpoint_dir="$out.ck" \
                train.log_every=1000 device.type=cpu output.metrics="$out.jsonl" \
                $(variant_flags "$v") > "$out.log" 2>&1; then
                echo "quality.sh: $model $v seed $seed failed:" >&2
                tail -5 "$out.log" >&2
                exit 1
            fi
            grep '"split":"test"' "$out.jsonl" |
                sed 's/.*"hr@10":\([^,]*\).*"ndcg@10":\([^,]*\).*/\1 \2/' >> "$W/res"
            [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$out.jsonl" "$KEEP/"
        done
        cpu=$(awk '{ s += $1 + $2; n++ } END { printf "%.0f", s / n }' "$W/cpu")
        awk -v m="$model" -v v="$v" -v cpu="$cpu" '
            { h[NR] = $1; g[NR] = $2; sh += $1; sg += $2 }
            END {
                mh = sh / NR; mg = sg / NR
                for (i = 1; i <= NR; i++) { vh += (h[i] - mh) ^ 2; vg += (g[i] - mg) ^ 2 }
                sdh = NR > 1 ? sqrt(vh / (NR - 1)) : 0; sdg = NR > 1 ? sqrt(vg / (NR - 1)) : 0
                printf "| %s | %s | %.4f ± %.4f | %.4f ± %.4f | %s |\n", m, v, mh, sdh, mg, sdg, cpu
            }' "$W/res"
    done
done
