#!/bin/sh
# bench/quality_features.sh: the features table of doc/quality.md on
# MovieLens latest-small: test HR@10 and NDCG@10 (mean and standard
# deviation over seeds) of HSTU without features, with the movies' genres
# as an item feature (movies.csv, multi-valued), and with genres plus two
# contextual tokens (user features: the user id itself, and the user's
# activity, floor(log2(number of ratings)), from a users.csv this script
# writes). The recipe of bench/quality.sh: the same steps and global batch
# for every variant, best-validation selection (train.keep_best), sampled
# softmax with 128 uniform negatives, temperature 0.05.
#
# usage: bench/quality_features.sh [DIR]   (DIR holds ratings.csv and
#   movies.csv; default ../shared/data/ml-latest-small next to the repo)
# environment: FREESCALE (the program), SEEDS ("1 2 3"), EPOCHS (16), LEN
# (50), BATCH (64), EVAL_EVERY (2), NP (ranks per run, 1), VARIANTS ("none
# genres genres+ctx"). Nothing is asserted; the figures and the CPU seconds
# per run are printed.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$here/../shared/data/ml-latest-small}
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "quality_features.sh: set FREESCALE to the program" >&2; exit 2; }
SEEDS=${SEEDS:-1 2 3}
EPOCHS=${EPOCHS:-16}
LEN=${LEN:-50}
BATCH=${BATCH:-64}
EVAL_EVERY=${EVAL_EVERY:-2}
NP=${NP:-1}
VARIANTS=${VARIANTS:-none genres genres+ctx}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-qfeat.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
# users.csv: userId, uid (the id as a categorical value), activity
awk -F, 'NR > 1 { n[$1]++ } END { print "userId,uid,activity"
    for (u in n) { a = 0; for (c = n[u]; c >= 2; c /= 2) a++; print u "," u "," a } }' \
    "$DIR/ratings.csv" > "$W/users.csv"
"$FS" data import --format csv "$DIR/ratings.csv" --items "$DIR/movies.csv" \
    --user-features "$W/users.csv" --user-key userId -o "$W/mls.h5" > /dev/null

flags() {
    case $1 in
        none) echo "" ;;
        genres) echo "features.item=genres" ;;
        genres+ctx) echo "features.item=genres features.user=uid,activity" ;;
    esac
}

printf '# ml-latest-small, HSTU, %s epochs of %s sequences, max_seq_len %s, seeds %s, best validation\n' \
    "$EPOCHS" "$BATCH" "$LEN" "$SEEDS"
printf '| features | HR@10 | NDCG@10 | CPU s / run |\n|---|---|---|---|\n'
for v in $VARIANTS; do
    : > "$W/res"
    : > "$W/cpu"
    for seed in $SEEDS; do
        out="$W/$v-$seed"
        # shellcheck disable=SC2046
        if ! /usr/bin/time -a -o "$W/cpu" -f "%U %S" mpirun -np "$NP" "$FS" train "$here/input/mls-hstu.in" \
            data.path="$W/mls.h5" data.max_seq_len="$LEN" train.batch_size="$BATCH" \
            train.epochs="$EPOCHS" train.eval_every="$EVAL_EVERY" train.temperature=0.05 \
            train.seed="$seed" train.keep_best=on output.checkpoint_dir="$out.ck" \
            train.log_every=1000 device.type=cpu output.metrics="$out.jsonl" \
            train.loss=softmax train.negatives=128 $(flags "$v") > "$out.log" 2>&1; then
            echo "quality_features.sh: $v seed $seed failed:" >&2
            tail -5 "$out.log" >&2
            exit 1
        fi
        grep '"split":"test"' "$out.jsonl" |
            sed 's/.*"hr@10":\([^,]*\).*"ndcg@10":\([^,]*\).*/\1 \2/' >> "$W/res"
    done
    cpu=$(awk '{ s += $1 + $2; n++ } END { printf "%.0f", s / n }' "$W/cpu")
    awk -v v="$v" -v cpu="$cpu" '
        { h[NR] = $1; g[NR] = $2; sh += $1; sg += $2 }
        END {
            mh = sh / NR; mg = sg / NR
            for (i = 1; i <= NR; i++) { vh += (h[i] - mh) ^ 2; vg += (g[i] - mg) ^ 2 }
            sdh = NR > 1 ? sqrt(vh / (NR - 1)) : 0; sdg = NR > 1 ? sqrt(vg / (NR - 1)) : 0
            printf "| %s | %.4f ± %.4f | %.4f ± %.4f | %s |\n", v, mh, sdh, mg, sdg, cpu
        }' "$W/res"
done
