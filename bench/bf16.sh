#!/bin/sh
# bench/bf16.sh: device.precision = bf16 on the CPU's emulation against
# fp32 on MovieLens latest-small (doc/training.md: Precision): HSTU and
# SASRec (input/mls-hstu.in; SASRec with temperature 1), STEPS steps (100)
# on one rank, for each seed: the worst relative difference of the
# training losses step by step, and test HR@10 / NDCG@10 after the last
# step. Passes (exit 0) when every loss is within LOSS_TOL (1e-2) of
# fp32's and every HR@10 within HR_TOL (0.005); exit 1 otherwise, 77 when
# the data is absent.
#
# usage: bench/bf16.sh [RATINGS.csv]
#   (default: ../shared/data/ml-latest-small/ratings.csv next to the repo)
# environment: FREESCALE (the program; default ./freescale, then the build
# tree's), SEEDS ("1 2 3"), STEPS (100), MODELS ("hstu sasrec").
# About 13 s of CPU per run, 12 runs (doc/training.md has the figures).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:-$here/../shared/data/ml-latest-small/ratings.csv}
[ -r "$DATA" ] || { echo "bf16.sh: SKIP: $DATA is absent (MovieLens latest-small's ratings.csv)"; exit 77; }
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "bf16.sh: set FREESCALE to the program" >&2; exit 2; }
SEEDS=${SEEDS:-1 2 3}
STEPS=${STEPS:-100}
MODELS=${MODELS:-hstu sasrec}
LOSS_TOL=${LOSS_TOL:-1e-2}
HR_TOL=${HR_TOL:-0.005}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-bf16.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
"$FS" data import --format csv "$DATA" -o "$W/mls.h5" > /dev/null

# the train losses of a metrics file, "step loss" lines
losses() { sed -n 's/.*"event":"train".*"step":\([0-9]*\),"loss":\([^,]*\),.*/\1 \2/p' "$1"; }
# test HR@10 and NDCG@10 of a metrics file
test_line() { grep '"split":"test"' "$1" | tail -n 1 |
    sed 's/.*"hr@10":\([^,]*\).*"ndcg@10":\([^,]*\).*/\1 \2/'; }

printf '# ml-latest-small, %s steps of 64 sequences, 1 rank, the CPU; bf16 = the emulation\n' "$STEPS"
printf '| model | seed | worst loss diff | HR@10 fp32 | HR@10 bf16 | NDCG@10 fp32 | NDCG@10 bf16 | CPU s fp32 / bf16 |\n'
printf '|---|---|---|---|---|---|---|---|\n'
bad=0
for model in $MODELS; do
    tau=0.05; [ "$model" = sasrec ] && tau=1
    for seed in $SEEDS; do
        for pr in fp32 bf16; do
            out="$W/$model-$seed-$pr"
            if ! /usr/bin/time -o "$out.cpu" -f "%U %S" mpirun -np 1 "$FS" train \
                "$here/input/mls-hstu.in" data.path="$W/mls.h5" model.type="$model" \
                train.temperature="$tau" train.seed="$seed" train.max_steps="$STEPS" \
                train.log_every=1 device.type=cpu device.precision=$pr \
                output.metrics="$out.jsonl" > "$out.log" 2>&1; then
                echo "bf16.sh: $model seed $seed $pr failed:" >&2
                tail -5 "$out.log" >&2
                exit 1
            fi
        done
        a=$W/$model-$seed-fp32 b=$W/$model-$seed-bf16
        losses "$a.jsonl" > "$W/la"
        losses "$b.jsonl" > "$W/lb"
        worst=$(paste "$W/la" "$W/lb" | awk '$1 != $3 { print "steps"; exit }
            { d = $2 - $4; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; if (d / m > w) w = d / m }
            END { if (NR == 0) print "none"; else printf "%.3g", w }')
        set -- $(test_line "$a.jsonl") $(test_line "$b.jsonl")
        printf '| %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %.1f / %.1f |\n' "$model" "$seed" \
            "$worst" "$1" "$3" "$2" "$4" \
            "$(awk '{ print $1 + $2 }' "$a.cpu")" "$(awk '{ print $1 + $2 }' "$b.cpu")"
        if ! awk -v w="$worst" -v t="$LOSS_TOL" -v h1="$1" -v h2="$3" -v ht="$HR_TOL" \
            'BEGIN { d = h1 - h2; if (d < 0) d = -d; exit !(w + 0 == w && w <= t && d <= ht) }'; then
            echo "bf16.sh: $model seed $seed: outside the tolerances (losses $LOSS_TOL, HR@10 $HR_TOL)" >&2
            bad=1
        fi
    done
done
[ $bad -eq 0 ] && echo "# every run within the tolerances: losses $LOSS_TOL relative, HR@10 $HR_TOL"
exit $bad
