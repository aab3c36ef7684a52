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
# usage: bench/quality_rank.sh [--seeds N] [DIR]   (DIR holds ratings.csv and
#   movies.csv; default ../shared/data/ml-latest-small next to the repo;
#   skipped with a message when it is absent; --seeds N: seeds 1 .. N)
# environment: FREESCALE (the program), SEEDS ("1 2 3", unless --seeds),
# NP (ranks per run, 2), and extra parameter overrides in ARGS (e.g.
# ARGS="train.epochs=8").
# Printed: a row per seed (like AUC, GAUC, NE, logloss, accuracy, rating
# MSE, MAE of the test line, the run's wall seconds), then per column the
# median, min, max and standard deviation (population) over the seeds, and
# the user+item baseline's row (the same for every seed). Nothing is
# asserted.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
NAME=quality_rank.sh
. "$here/bench/mls_common.sh"

# num FILE SPLIT KEY: KEY of the last eval line of SPLIT in the metrics FILE
num() { sed -n "s/.*\"split\":\"$2\".*\"$3\":\([^,}]*\).*/\1/p" "$1" | tail -1; }
KEYS="like.auc like.gauc like.ne like.logloss like.accuracy rating.mse rating.mae"

printf '# ml-latest-small, input/mls-rank.in, %s ranks, seeds %s%s\n' "$NP" "$(echo $SEEDS)" \
    "${ARGS:+, $ARGS}"
printf '| seed | like AUC | GAUC | NE | logloss | acc | rating MSE | MAE | s |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
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
    row="$seed"
    for k in $KEYS; do row="$row $(num "$out.jsonl" test "$k")"; done
    row="$row $(echo "$t1 $t0" | awk '{ printf "%.0f", $1 - $2 }')"
    echo "$row" >> "$W/rows"
    echo "$row" | awk '{ printf "| %s |", $1; for (i = 2; i < NF; i++) printf " %.4f |", $i
        printf " %s |\n", $NF }'
    base=$out.jsonl
    rm -rf "$out.ck"
done
# per column: median, min, max, std (bench/seed_stats.sh)
. "$here/bench/seed_stats.sh"
stat() { seed_stat "$W/rows" "$1" "$2"; }
for what in median min max std; do
    printf '| %s |' "$what"
    for c in 2 3 4 5 6 7 8; do printf ' %s |' "$(stat $c $what)"; done
    printf ' %.0f |\n' "$(stat 9 $what)"
done
printf '| user+item baseline |'
for k in $KEYS; do printf ' %.4f |' "$(num "$base" test-baseline-user+item "$k")"; done
printf ' |\n'
