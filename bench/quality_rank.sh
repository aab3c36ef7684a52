#!/bin/sh
# bench/quality_rank.sh: the ranking table of doc/quality.md on MovieLens
# latest-small: input/mls-rank.in (HSTU, like = rating >= 4 and the rating
# as tasks, data.split = last:10%, genres and year) for each seed: the test
# AUC, GAUC and NE of like and the rating's MSE of the checkpoint with the
# best validation like AUC, the like AUC of the smoothed additive
# user+item baseline computed in the same run (train.baseline), and the
# run's wall seconds (training, evaluations and baselines); then the
# median of each column, and the baseline's own GAUC, NE and MSE (the same
# for every seed: it depends on the data alone).
#
# usage: bench/quality_rank.sh [DIR]   (DIR holds ratings.csv and movies.csv;
#   default ../shared/data/ml-latest-small next to the repo; skipped with a
#   message when it is absent)
# environment: FREESCALE (the program), SEEDS ("1 2 3"), NP (ranks per run,
# 2), and extra parameter overrides in ARGS (e.g. ARGS="train.epochs=8").
# Nothing is asserted; the figures are printed.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$here/../shared/data/ml-latest-small}
if [ ! -f "$DIR/ratings.csv" ] || [ ! -f "$DIR/movies.csv" ]; then
    echo "quality_rank.sh: skipped: no ratings.csv and movies.csv in $DIR"
    exit 0
fi
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "quality_rank.sh: set FREESCALE to the program" >&2; exit 2; }
SEEDS=${SEEDS:-1 2 3}
NP=${NP:-2}
ARGS=${ARGS:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-qrank.XXXXXX")
trap 'rm -rf "$W"' EXIT
"$FS" data import --format csv "$DIR/ratings.csv" --items "$DIR/movies.csv" \
    --event-cols rating:float -o "$W/mls-rank.h5" > /dev/null

# num FILE SPLIT KEY: KEY of the last eval line of SPLIT in the metrics FILE
num() { sed -n "s/.*\"split\":\"$2\".*\"$3\":\([^,}]*\).*/\1/p" "$1" | tail -1; }

printf '# ml-latest-small, input/mls-rank.in, %s ranks, seeds %s%s\n' "$NP" "$SEEDS" \
    "${ARGS:+, $ARGS}"
printf '| seed | like AUC | baseline AUC | like GAUC | like NE | rating MSE | s |\n'
printf '|---|---|---|---|---|---|---|\n'
: > "$W/rows"
for seed in $SEEDS; do
    out="$W/s$seed"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    if ! mpirun -np "$NP" "$FS" train "$here/input/mls-rank.in" data.path="$W/mls-rank.h5" \
        train.seed="$seed" output.checkpoint_dir="$out.ck" output.metrics="$out.jsonl" \
        train.log_every=1000 $ARGS > "$out.log" 2>&1; then
        echo "quality_rank.sh: seed $seed failed:" >&2
        tail -5 "$out.log" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    m=$out.jsonl
    row="$seed $(num "$m" test like.auc) $(num "$m" test-baseline-user+item like.auc) \
$(num "$m" test like.gauc) $(num "$m" test like.ne) $(num "$m" test rating.mse) \
$(echo "$t1 $t0" | awk '{ printf "%.0f", $1 - $2 }')"
    echo "$row" >> "$W/rows"
    echo "$row" | awk '{ printf "| %s | %.4f | %.4f | %.4f | %.4f | %.4f | %s |\n",
        $1, $2, $3, $4, $5, $6, $7 }'
    rm -rf "$out.ck"
done
# the median of each column (the middle value; the mean of the two middle ones)
med() { awk -v c="$1" '{ print $c }' "$W/rows" | sort -g |
    awk '{ v[NR] = $1 } END { printf "%.4f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '| median | %s | %s | %s | %s | %s | %.0f |\n' "$(med 2)" "$(med 3)" "$(med 4)" "$(med 5)" \
    "$(med 6)" "$(med 7)"
m=$W/s$(echo "$SEEDS" | awk '{ print $1 }').jsonl
printf '| user+item baseline | %.4f | | %.4f | %.4f | %.4f | |\n' \
    "$(num "$m" test-baseline-user+item like.auc)" "$(num "$m" test-baseline-user+item like.gauc)" \
    "$(num "$m" test-baseline-user+item like.ne)" "$(num "$m" test-baseline-user+item rating.mse)"
