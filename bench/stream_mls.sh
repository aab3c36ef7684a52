#!/bin/sh
# bench/stream_mls.sh: streaming ranking (doc/quality.md, "Streaming"):
# input/mls-rank.in with train.schedule = stream, each window evaluated
# (test-then-train: every rating predicted from the user's history before
# the window, the bias rows taking in the labels of every earlier window as
# the online baseline does) and then trained once, batch 4, rates 2e-3.
# model.bias is fitted on the events before a time T (data.split =
# time:V,T: [V, T) validates, where the file's model.bias_prior = auto and
# model.recency = auto choose; then the rows take in [V, T) too), and the
# stream starts at T. Three cuts:
#   year   ml-latest-small by year from 2000 (19 windows; 1996-98 train,
#          1999 validates);
#   week   ml-latest-small by week from 2017-01-01 (90 windows; before 2016
#          trains, 2016 validates);
#   drift  a generated stream of drifting tastes, one per seed (data gen
#          --stream --labels --seed S: 20 days, 500 users, 500 items,
#          popularity rotated by 2% a day, tastes turning 0.1 rad a day,
#          --taste-drift; raw ids: embedding.dynamic = on, no item
#          features; tasks like and rating): days 0-2 train, day 3
#          validates, one-day windows from day 4 (16 windows).
# model.recency = auto is chosen again before each window on the previous
# one (window 0: on the validation events), "off" among the choices
# (doc/quality.md); the choices are printed per window and counted per seed.
# Per seed, the like AUC of the model and of the online user+item baseline
# of every window (the first seed's printed); then the mean over windows
# 1.., 3.. and 5.. per seed, the median over seeds and the spread (lowest,
# highest) of the model's lead over windows 3.., and how many windows the
# model wins.
#
# usage: bench/stream_mls.sh [--cut year|week|drift] [--quick] [--seeds N] [DIR]
#   (DIR holds ratings.csv and movies.csv; default ../shared/data/
#   ml-latest-small next to the repo; year and week are skipped with a
#   message when it is absent; --quick: one seed and a short stream, 8
#   weeks or 7 days, a smoke test)
# environment: FREESCALE, NP (2), ARGS (extra parameters, e.g.
# ARGS="model.recency=0"), SEEDS (e.g. "6 7 8 9 10": other drift streams).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
NAME=stream_mls.sh
CUT=year QUICK=
while :; do
    case "${1:-}" in
    --cut) case "${2:-}" in year | week | drift) CUT=$2 ;;
           *) echo "$NAME: --cut year, week or drift" >&2; exit 2 ;; esac; shift 2 ;;
    --quick) QUICK=1; SEEDS=${SEEDS:-1}; shift ;;
    *) break ;;
    esac
done
# shellcheck disable=SC2034 # read by mls_common.sh: no ml-latest-small needed
[ "$CUT" = drift ] && MLS_OPTIONAL=1
. "$here/bench/mls_common.sh"
FS=$(cd "$(dirname "$FS")" && pwd)/$(basename "$FS") # the runs start in $W
# (the factor terms off: their rate's auto choice runs epochs, not windows)
S="train.schedule=stream train.lr_schedule=constant train.keep_best=off train.patience=0
train.batch_size=4 train.lr=2e-3 embedding.lr=2e-3 train.log_every=100000 model.factors=0 model.factors_lr=0"
case $CUT in
year) S="$S data.window=365d data.stream_start=2000-01-01 data.split=time:915148800,946684800"
    what="ml-latest-small by year from 2000" ;;
week) S="$S data.window=7d data.stream_start=2017-01-01 data.split=time:1451606400,1483228800"
    [ -z "$QUICK" ] || S="$S data.stream_end=2017-02-26"
    what="ml-latest-small by week from 2017" ;;
drift) # days 0-2 train, day 3 validates (day 0: 2020-01-01), windows from day 4
    S="$S data.window=1d data.stream_start=2020-01-05 data.split=time:1578009600,1578096000
embedding.dynamic=on features.item="
    GEN="--days 20 --users 500"
    [ -z "$QUICK" ] || GEN="--days 11 --users 200"
    GEN="--stream $GEN --items 500 --drift 0.02 --taste-drift 0.1 --labels"
    what="a drifting stream (data gen $GEN --seed S)" ;;
esac
printf '# %s, input/mls-rank.in as a stream, %s ranks%s\n' "$what" "$NP" "${ARGS:+, $ARGS}"
: > "$W/means"
for seed in $SEEDS; do
    t0=$(date +%s)
    data=
    if [ "$CUT" = drift ]; then
        # shellcheck disable=SC2086
        "$FS" data gen $GEN --seed "$seed" -o "$W/d$seed.h5" > /dev/null
        data="data.path=$W/d$seed.h5"
    fi
    # shellcheck disable=SC2086
    (cd "$W" && "${MPIRUN:-mpirun}" -np "$NP" "$FS" train "$here/input/mls-rank.in" $S $ARGS $data \
        ${data:+"train.tasks=like:binary:like, rating:regression:rating:0.5"} \
        "train.seed=$seed" "output.checkpoint_dir=$W/ck$seed" "output.metrics=$W/m$seed.jsonl") \
        > "$W/log$seed" 2>&1 || { echo "stream_mls.sh: seed $seed failed:"; tail -n 5 "$W/log$seed"; exit 1; }
    [ "$CUT" = drift ] && rm -f "$W/d$seed.h5"
    t1=$(date +%s)
    # window, like AUC, baseline's, the half-life model.recency = auto chose for it (- none)
    sed -n 's/.*"event":"window","window":\([0-9]*\),.*"like.auc":\([^,}]*\).*"baseline.like.auc":\([^,}]*\).*/\1 \2 \3/p' \
        "$W/m$seed.jsonl" > "$W/w$seed"
    sed -n '/"event":"window"/{s/.*"recency":\([0-9.e+-]*\).*/\1/p;t;s/.*/-/p;}' "$W/m$seed.jsonl" |
        paste -d' ' "$W/w$seed" - > "$W/x$seed" && mv "$W/x$seed" "$W/w$seed"
    grep -o 'model[.a-z_]* = auto:.*chosen [0-9.e+,-]*' "$W/log$seed" | sed 's/:.* chosen/: chosen/' |
        tr '\n' ' ' | sed "s/^/seed $seed: /; s/ \$/\n/"
    awk -v seed="$seed" '$4 != "-" { n[$4 == 0 ? "off" : $4]++ } END { s = ""
        for (h in n) s = s sprintf(" %s x%d", h, n[h]); if (s != "")
        printf "seed %s: model.recency chosen per window (half-life x windows):%s\n", seed, s }' \
        "$W/w$seed"
    if [ "$seed" = "$(echo $SEEDS | cut -d' ' -f1)" ]; then
        echo "seed $seed, per window:"
        printf '| window | like AUC | online baseline | model.recency |\n|---|---|---|---|\n'
        awk '{ printf "| %d | %.4f | %.4f | %s |\n", $1, $2, $3, $4 == 0 ? "off" : $4 }' "$W/w$seed"
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
awk '{ print $6 - $7 }' "$W/means" | sort -g | awk '{ v[NR] = $1 }
    END { printf "model - baseline over the windows from 3: median %+.4f, lowest %+.4f, highest %+.4f (%d seeds)\n",
          v[int((NR + 1) / 2)], v[1], v[NR], NR }'
