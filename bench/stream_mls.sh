#!/bin/sh
# bench/stream_mls.sh: streaming ranking on MovieLens latest-small cut by
# year (doc/quality.md, "Streaming on ml-latest-small"): input/mls-rank.in
# with train.schedule = stream, data.window = 365d from 2000-01-01,
# model.bias fitted on the ratings before it (data.split =
# time:915148800,946684800: 1996-98 train, 1999 validates, where the
# file's model.bias_prior = auto and model.recency = auto choose; then
# the rows take in 1999 too), each window evaluated (test-then-
# train: every rating predicted from the user's history before the window,
# the bias rows taking in the labels of every earlier window as the online
# baseline does) and then trained once. Per seed, the like AUC of the model
# and of the online user+item baseline of every window; then the mean over
# windows 1.., 3.. and 5.. per seed, the median over seeds, and how many
# windows the model wins.
#
# usage: bench/stream_mls.sh [--seeds N] [DIR]   (DIR holds ratings.csv and
#   movies.csv; default ../shared/data/ml-latest-small next to the repo;
#   skipped with a message when absent)
# environment: FREESCALE, NP (2), ARGS (extra parameters, e.g.
# ARGS="model.recency=0").
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
NAME=stream_mls.sh
. "$here/bench/mls_common.sh"
FS=$(cd "$(dirname "$FS")" && pwd)/$(basename "$FS") # the runs start in $W
S="train.schedule=stream data.window=365d data.stream_start=2000-01-01
data.split=time:915148800,946684800 train.lr_schedule=constant train.keep_best=off train.patience=0
train.batch_size=4 train.lr=2e-3 embedding.lr=2e-3 train.log_every=100000"
printf '# ml-latest-small by year from 2000, input/mls-rank.in as a stream, %s ranks%s\n' "$NP" \
    "${ARGS:+, $ARGS}"
: > "$W/means"
for seed in $SEEDS; do
    t0=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$W" && "${MPIRUN:-mpirun}" -np "$NP" "$FS" train "$here/input/mls-rank.in" $S $ARGS \
        "train.seed=$seed" "output.checkpoint_dir=$W/ck$seed" "output.metrics=$W/m$seed.jsonl") \
        > "$W/log$seed" 2>&1 || { echo "stream_mls.sh: seed $seed failed:"; tail -n 5 "$W/log$seed"; exit 1; }
    t1=$(date +%s)
    sed -n 's/.*"event":"window","window":\([0-9]*\),.*"like.auc":\([^,}]*\).*"baseline.like.auc":\([^,}]*\).*/\1 \2 \3/p' \
        "$W/m$seed.jsonl" > "$W/w$seed"
    if [ "$seed" = "$(echo $SEEDS | cut -d' ' -f1)" ]; then
        echo "seed $seed, per window:"
        printf '| window | like AUC | online baseline |\n|---|---|---|\n'
        awk '{ printf "| %d | %.4f | %.4f |\n", $1, $2, $3 }' "$W/w$seed"
    fi
    awk -v seed="$seed" -v s=$((t1 - t0)) '
        { for (i = 0; i < 3; i++) { lo = i == 0 ? 1 : i == 1 ? 3 : 5
              if ($1 >= lo) { m[i] += $2; b[i] += $3; n[i]++; w[i] += $2 > $3 } } }
        END { printf "%s", seed
              for (i = 0; i < 3; i++) printf " %.4f %.4f %d %d", m[i] / n[i], b[i] / n[i], w[i], n[i]
              printf " %d\n", s }' "$W/w$seed" >> "$W/means"
done
echo "mean like AUC over the windows from 1, 3 and 5 (model / online baseline, windows won):"
printf '| seed | from 1 | from 3 | from 5 | s |\n|---|---|---|---|---|\n'
awk '{ printf "| %s | %.4f / %.4f (%d of %d) | %.4f / %.4f (%d of %d) | %.4f / %.4f (%d of %d) | %d |\n",
        $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14 }' "$W/means"
sort -n -k 6 "$W/means" | awk '{ v[NR] = $0 } END { split(v[int((NR + 1) / 2)], a, " ")
    printf "| median (by from 3) | | %.4f / %.4f | | |\n", a[6], a[7] }'
