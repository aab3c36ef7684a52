#!/bin/sh
# bench/quality_rank.sh: the ranking tables of doc/quality.md, for a
# configuration file (default input/mls-rank.in), in up to four parts:
#
#   full       on MovieLens latest-small, per seed: the test like AUC,
#              GAUC, NE, logloss, accuracy and the rating's MSE, MAE of the
#              checkpoint with the best validation like AUC, the run's wall
#              seconds; per column the median, min, max and standard
#              deviation (population) over the seeds; the smoothed
#              additive user+item baseline of the same run (train.baseline,
#              the same for every seed: it depends on the data alone).
#   ablation   the same runs three ways: both (the file as it is: the
#              per-item/user terms, model.recency and the sequence model),
#              the terms alone (debug.terms_only = on: the sequence model's
#              output left out of the logits) and the sequence model alone
#              (model.bias = off, model.recency = 0, model.factors = 0 and
#              its rate 0, no model.bias_prior);
#              per way the medians over the seeds, the steps, the epoch of
#              the best validation and the validation like AUC at every
#              evaluation (median over the seeds: the curve says whether
#              the run has converged).
#   halves     held out: ml-latest-small's ratings.csv cut into two halves
#              of users (odd user ids A, even B; bench/quality_lib.sh),
#              each imported with the documented command; every candidate
#              setting (CHOICES) run on both halves; the candidate with the
#              best median test like AUC on one half chosen and reported on
#              the other, both ways, against that half's user+item
#              baseline (like AUC, GAUC, NE, rating MSE).
#   generated  two sets of other shapes, each seed its own data: planted
#              labels (data gen --labels planted:4: 800 users, 300 items,
#              lengths uniform 50 .. 150, zipf 0.8; the tasks click and
#              rating, data.split = last:4) and a Yambda-shaped stream
#              (data gen --yambda: 14 days, 600 users, 2000 tracks, median
#              60 events; the task listen_plus, the tracks' artist and
#              album, the factor rows keyed by the artist
#              (model.factor_feature = artist: the set's taste is per user
#              x artist), day 12 validates and day 13 tests, a dynamic item
#              table for its raw ids), the file's other settings unchanged;
#              per set the median (min .. max) over the seeds of the test
#              AUC and NE of the first task, its user+item baseline's, the
#              recorded optimum's (the file's planted_visible_auc / _ne,
#              what the evaluation shows; Yambda's planted_auc / _ne: both
#              know each user's hidden parameters) and the optimum of what
#              the history shows (planted_posterior_auc / _ne: the users'
#              parameters from their posterior; doc/data.md), the per-seed
#              gaps to each; then per seed the AUC against both optima.
#
# usage: bench/quality_rank.sh [--seeds N] [--config FILE] [--parts LIST] [DIR]
#   --seeds N: seeds 1 .. N (default: $SEEDS, else 1 2 3); --config FILE:
#   the configuration (default input/mls-rank.in); --parts LIST:
#   comma-separated among full, ablation, halves, generated, or all
#   (default full); DIR holds ratings.csv and movies.csv (default
#   ../shared/data/ml-latest-small next to the repo; absent: the
#   ml-latest-small parts skipped with a message).
# environment: FREESCALE (the program), NP (ranks per run, 2), ARGS (extra
#   parameter overrides of every run, e.g. ARGS="train.epochs=8"), CHOICES
#   (the halves' candidate settings, ';'-separated override lists, '-' the
#   file as it is; default "-;model.recency=20").
# Generated sets need /usr/bin/python3 with h5py for the optimum (else
# skipped with a message). Nothing is asserted.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
NAME=quality_rank.sh
CONFIG=$here/input/mls-rank.in
PARTS=full
SEEDS_OPT=
while [ $# -gt 0 ]; do
    case $1 in
    --seeds) [ $# -ge 2 ] || { echo "$NAME: --seeds N" >&2; exit 2; }
        SEEDS_OPT=$2; shift 2 ;;
    --config) [ $# -ge 2 ] && [ -f "$2" ] || { echo "$NAME: --config FILE (an existing file)" >&2; exit 2; }
        CONFIG=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    --parts) [ $# -ge 2 ] || { echo "$NAME: --parts LIST" >&2; exit 2; }
        PARTS=$2; shift 2 ;;
    -*) echo "usage: bench/quality_rank.sh [--seeds N] [--config FILE] [--parts LIST] [DIR]" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ "$PARTS" = all ] && PARTS=full,ablation,halves,generated
for p in $(echo "$PARTS" | tr ',' ' '); do
    case $p in full | ablation | halves | generated) ;;
    *) echo "$NAME: --parts: '$p' is not one of full, ablation, halves, generated, all" >&2; exit 2 ;;
    esac
done
has() { case ",$PARTS," in *",$1,"*) return 0 ;; esac; return 1; }
# shellcheck disable=SC2034 # read by bench/mls_common.sh
MLS_OPTIONAL=1
if [ -n "$SEEDS_OPT" ]; then set -- --seeds "$SEEDS_OPT" "$@"; fi
. "$here/bench/mls_common.sh"
. "$here/bench/seed_stats.sh"
. "$here/bench/quality_lib.sh"
CHOICES=${CHOICES:--;model.recency=20}
export OMPI_MCA_mpi_yield_when_idle=1   # ranks waiting in MPI give the shared cores back
PY=/usr/bin/python3
CFG=${CONFIG#"$here"/}
REV=$(git -C "$here" log -1 --format=%h -- "$CONFIG" 2>/dev/null || true)
git -C "$here" diff --quiet HEAD -- "$CONFIG" 2>/dev/null || REV="${REV:-?} with uncommitted changes"
FIRST=$(echo $SEEDS | cut -d' ' -f1)

# train_run TAG DATA SEED [OVERRIDE ...]: one run of the configuration,
# its metrics in $W/TAG.jsonl, its wall seconds in $W/TAG.s
train_run() {
    tag=$1 data=$2 seed=$3
    shift 3
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    if ! mpirun -np "$NP" "$FS" train "$CONFIG" data.path="$data" train.seed="$seed" \
        output.checkpoint_dir="$W/$tag.ck" output.metrics="$W/$tag.jsonl" train.log_every=1000 \
        "$@" $ARGS < /dev/null > "$W/$tag.log" 2>&1; then
        echo "$NAME: $tag (seed $seed) failed:" >&2
        tail -5 "$W/$tag.log" >&2
        exit 1
    fi
    t1=$(date +%s.%N)
    echo "$t1 $t0" | awk '{ printf "%.0f\n", $1 - $2 }' > "$W/$tag.s"
    rm -rf "$W/$tag.ck"
}
KEYS="like.auc like.gauc like.ne like.logloss like.accuracy rating.mse rating.mae"
K4="like.auc like.gauc like.ne rating.mse"
# vals FILE SPLIT KEYS...: the KEYS of the last SPLIT line, blank-separated
vals() {
    f=$1 s=$2
    shift 2
    for k in "$@"; do printf ' %s' "$(num "$f" "$s" "$k")"; done
}
f4() { awk '{ for (i = 1; i <= NF; i++) printf " %.4f |", $i }'; }

printf '# %s (commit %s), %s ranks, seeds %s%s; %s, load %s\n' "$CFG" "${REV:-?}" "$NP" \
    "$(echo $SEEDS)" "${ARGS:+, $ARGS}" "$(date -u +%Y-%m-%d)" \
    "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

if [ -z "$MLS_ABSENT" ] && { has full || has ablation; }; then
    for seed in $SEEDS; do train_run both$seed "$W/mls-rank.h5" "$seed"; done
fi
if [ -z "$MLS_ABSENT" ] && has full; then
    printf '\n## ml-latest-small\n\n'
    printf '| seed | like AUC | GAUC | NE | logloss | acc | rating MSE | MAE | s |\n'
    printf '|---|---|---|---|---|---|---|---|---|\n'
    : > "$W/rows"
    for seed in $SEEDS; do
        # shellcheck disable=SC2086
        row="$seed$(vals "$W/both$seed.jsonl" test $KEYS) $(cat "$W/both$seed.s")"
        echo "$row" >> "$W/rows"
        echo "$row" | awk '{ printf "| %s |", $1; for (i = 2; i < NF; i++) printf " %.4f |", $i
            printf " %s |\n", $NF }'
    done
    for what in median min max std; do
        printf '| %s |' "$what"
        for c in 2 3 4 5 6 7 8; do printf ' %s |' "$(seed_stat "$W/rows" $c $what)"; done
        printf ' %.0f |\n' "$(seed_stat "$W/rows" 9 $what)"
    done
    printf '| user+item baseline |'
    # shellcheck disable=SC2086
    vals "$W/both$FIRST.jsonl" test-baseline-user+item $KEYS | f4
    printf ' |\n'
fi
if [ -z "$MLS_ABSENT" ] && has ablation; then
    for seed in $SEEDS; do
        train_run terms$seed "$W/mls-rank.h5" "$seed" debug.terms_only=on
        train_run seq$seed "$W/mls-rank.h5" "$seed" model.bias=off model.recency=0 model.factors=0 \
            model.factors_lr=0 model.bias_prior=
    done
    printf '\n## ml-latest-small: what the sequence model adds (medians over seeds %s)\n\n' "$(echo $SEEDS)"
    printf '| configuration | steps | best epoch | like AUC (min .. max) | GAUC | NE | rating MSE | validation like AUC at each evaluation |\n'
    printf '|---|---|---|---|---|---|---|---|\n'
    for way in "both:both (the file)" "terms:terms alone (debug.terms_only = on)" \
        "seq:sequence model alone (model.bias = off, model.recency = 0)"; do
        w=${way%%:*}
        : > "$W/ab" && : > "$W/cv"
        for seed in $SEEDS; do
            # shellcheck disable=SC2086
            echo "$(summary "$W/$w$seed.jsonl" step) $(summary "$W/$w$seed.jsonl" best_epoch)$(vals "$W/$w$seed.jsonl" test $K4)" >> "$W/ab"
            curve "$W/$w$seed.jsonl" like.auc >> "$W/cv"
        done
        printf '| %s | %s | %s | %s |' "${way#*:}" "$(seed_stat "$W/ab" 1 median | sed 's/\.0*$//')" \
            "$(seed_stat "$W/ab" 2 median | sed 's/\.0*$//')" "$(mmm "$W/ab" 3)"
        for c in 4 5 6; do printf ' %s |' "$(seed_stat "$W/ab" $c median)"; done
        printf ' %s |\n' "$(curve_median "$W/cv")"
    done
    printf '| user+item baseline | | |'
    # shellcheck disable=SC2086
    vals "$W/both$FIRST.jsonl" test-baseline-user+item $K4 | f4
    printf ' |\n'
fi
if [ -z "$MLS_ABSENT" ] && has halves; then
    split_users "$DIR/ratings.csv" "$W/a.csv" "$W/b.csv"
    for h in a b; do
        "$FS" data import --format movielens "$W/$h.csv" --items "$DIR/movies.csv" \
            -o "$W/half-$h.h5" > /dev/null
    done
    echo "$CHOICES" | tr ';' '\n' > "$W/choices"
    : > "$W/ha" && : > "$W/hb"
    i=0
    while IFS= read -r c; do
        i=$((i + 1))
        [ "$c" = - ] && c=
        for h in a b; do
            for seed in $SEEDS; do
                # shellcheck disable=SC2086
                train_run h$h$i-$seed "$W/half-$h.h5" "$seed" $c
                # shellcheck disable=SC2086
                echo "$i $seed$(vals "$W/h$h$i-$seed.jsonl" test $K4)" >> "$W/h$h"
            done
        done
    done < "$W/choices"
    printf '\n## held out: ml-latest-small in two halves of users (A: odd ids, B: even)\n\n'
    printf '| candidate | A: like AUC (min .. max) | B: like AUC (min .. max) |\n|---|---|---|\n'
    i=0
    while IFS= read -r c; do
        i=$((i + 1))
        pick "$W/ha" $i > "$W/pa" && pick "$W/hb" $i > "$W/pb"
        printf '| %s | %s | %s |\n' "$c" "$(mmm "$W/pa" 3)" "$(mmm "$W/pb" 3)"
    done < "$W/choices"
    printf '\n| chosen on | reported on | setting | like AUC (min .. max) | baseline | margin | GAUC | baseline | NE | baseline | rating MSE | baseline |\n'
    printf '|---|---|---|---|---|---|---|---|---|---|---|---|\n'
    for d in "a b" "b a"; do
        set -- $d
        ch=$(choose "$W/h$1" 3)
        pick "$W/h$2" "$ch" > "$W/rep"
        U=$(echo "$2" | tr ab AB)
        # shellcheck disable=SC2086
        base=$(vals "$W/h$2$ch-$FIRST.jsonl" test-baseline-user+item $K4)
        am=$(seed_stat "$W/rep" 3 median)
        printf '| %s | %s | %s | %s | %.4f | %+.4f |' "$(echo "$1" | tr ab AB)" "$U" \
            "$(sed -n "${ch}p" "$W/choices")" "$(mmm "$W/rep" 3)" "$(echo "$base" | awk '{ print $1 }')" \
            "$(echo "$am $base" | awk '{ print $1 - $2 }')"
        for c in 4 5 6; do
            printf ' %s | %.4f |' "$(seed_stat "$W/rep" $c median)" "$(echo "$base" | awk -v c=$((c - 2)) '{ print $c }')"
        done
        printf '\n'
    done
fi
if has generated; then
    if ! "$PY" -c 'import h5py' 2>/dev/null; then
        echo "$NAME: the generated sets skipped: $PY cannot import h5py"
    else
        attr() { "$PY" -c 'import sys, h5py; print(float(h5py.File(sys.argv[1], "r").attrs[sys.argv[2]]))' "$1" "$2"; }
        : > "$W/gp" && : > "$W/gy"
        for seed in $SEEDS; do
            "$FS" data gen --users 800 --items 300 --length uniform:50,150 --timestamps --zipf 0.8 \
                --labels planted:4 --seed "$seed" -o "$W/planted.h5" > /dev/null
            train_run gp$seed "$W/planted.h5" "$seed" "train.tasks=click:binary:click, rating:regression:rating:0.5" \
                features.item= data.split=last:4
            echo "$seed$(vals "$W/gp$seed.jsonl" test click.auc click.ne)$(vals "$W/gp$seed.jsonl" \
                test-baseline-user+item click.auc click.ne) $(attr "$W/planted.h5" planted_visible_auc) $(attr \
                "$W/planted.h5" planted_visible_ne) $(attr "$W/planted.h5" planted_posterior_auc) $(attr \
                "$W/planted.h5" planted_posterior_ne)" >> "$W/gp"
            "$FS" data gen --yambda --days 14 --users 600 --tracks 2000 --albums 200 --artists 40 \
                --median-length 60 --seed "$seed" -o "$W/yambda.h5" > /dev/null
            train_run gy$seed "$W/yambda.h5" "$seed" "train.tasks=listen_plus:binary:played_ratio_pct>=50" \
                features.item=artist,album model.factor_feature=artist data.split=time:1036800,1123200 \
                embedding.dynamic=on
            echo "$seed$(vals "$W/gy$seed.jsonl" test listen_plus.auc listen_plus.ne)$(vals "$W/gy$seed.jsonl" \
                test-baseline-user+item listen_plus.auc listen_plus.ne) $(attr "$W/yambda.h5" planted_auc) $(attr \
                "$W/yambda.h5" planted_ne) $(attr "$W/yambda.h5" planted_posterior_auc) $(attr \
                "$W/yambda.h5" planted_posterior_ne)" >> "$W/gy"
        done
        printf '\n## generated sets (medians (min .. max) over seeds %s, each seed its own data)\n\n' "$(echo $SEEDS)"
        printf '| set | AUC | baseline | optimum | posterior optimum | AUC - baseline | AUC - optimum | AUC - posterior | NE | baseline | optimum | posterior | NE - optimum | NE - posterior |\n'
        printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
        for g in "gp:planted:4 (800 x 50..150, 300 items; click)" "gy:Yambda-shaped (14 days, 600 users; listen_plus)"; do
            f=$W/${g%%:*}
            gaps "$f" > "$f.g"
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "${g#*:}" \
                "$(mmm "$f.g" 2)" "$(mmm "$f.g" 4)" "$(mmm "$f.g" 6)" "$(mmm "$f.g" 8)" "$(mmm "$f.g" 10)" \
                "$(mmm "$f.g" 11)" "$(mmm "$f.g" 13)" "$(seed_stat "$f.g" 3 median)" \
                "$(seed_stat "$f.g" 5 median)" "$(seed_stat "$f.g" 7 median)" \
                "$(seed_stat "$f.g" 9 median)" "$(mmm "$f.g" 12)" "$(mmm "$f.g" 14)"
        done
        printf '\n| set | seed | AUC | optimum | posterior optimum | AUC - optimum | AUC - posterior | NE | optimum | posterior |\n'
        printf '|---|---|---|---|---|---|---|---|---|---|\n'
        for g in "gp:planted:4" "gy:Yambda-shaped"; do
            awk -v set="${g#*:}" '{ printf "| %s | %s | %.4f | %.4f | %.4f | %+.4f | %+.4f | %.4f | %.4f | %.4f |\n",
                set, $1, $2, $6, $8, $11, $13, $3, $7, $9 }' "$W/${g%%:*}.g"
        done
    fi
fi
