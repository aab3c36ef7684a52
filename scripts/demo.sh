#!/usr/bin/env bash
# scripts/demo.sh [ratings.csv]: one command from a fresh clone to a trained
# recommender. Installs the dependencies, builds, makes a dataset (imports
# a MovieLens-style ratings.csv when given one, else generates a synthetic
# one), trains HSTU on 2 ranks, and prints the test HR@10 and NDCG@10 next
# to a most-popular-items baseline. Each stage prints one line; the build's
# and the tools' output go to demo/build.log and demo/data.log (printed
# path and last lines on failure), training's to the terminal and
# demo/train.log. On ml-latest-small the training (40 epochs) takes 46 s
# of CPU: about 25 s on 2 idle cores (README "Two commands": measured).
#   scripts/demo.sh ../shared/data/ml-latest-small/ratings.csv
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p demo
# stage NAME LOG CMD...: one line, CMD's output into LOG; on failure the
# log's path and its last lines, and the demo ends
stage() {
    local name=$1 log=$2; shift 2
    echo "demo: $name (output: $log)"
    if ! "$@" >> "$log" 2>&1; then
        echo "demo: $name FAILED; the last lines of $log:" >&2
        tail -n 20 "$log" >&2
        exit 1
    fi
}
: > demo/build.log
: > demo/data.log
. scripts/deps.sh
stage "installing the Debian packages it needs" demo/build.log freescale_install_deps
if [ ! -x ./freescale ]; then
    stage "autoreconf" demo/build.log autoreconf -fi
    stage "configure" demo/build.log ./configure
    stage "make -j2" demo/build.log make -j2
fi
if [ $# -ge 1 ]; then
    stage "importing $1" demo/data.log ./freescale data import --format csv "$1" -o demo/data.h5
    EPOCHS=40
else
    stage "no ratings.csv given: generating a synthetic dataset" demo/data.log \
        ./freescale data gen --users 2000 --items 1500 --length lognormal:4.0,0.8 --zipf 1.0 \
        --timestamps --seed 7 -o demo/data.h5
    EPOCHS=15
fi
stage "checking the dataset" demo/data.log ./freescale data stats demo/data.h5
grep -E "^(users|items|events|length (p50|max)):" demo/data.log | sed 's/^/  /'
if [ "$(id -u)" -eq 0 ]; then # Open MPI refuses root unless told
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
[ "$(nproc)" -ge 2 ] || export OMPI_MCA_rmaps_base_oversubscribe=1
echo "demo: training HSTU on 2 ranks, $EPOCHS epochs (output: demo/train.log)"
start=$(date +%s)
mpirun -np 2 ./freescale train input/mls-hstu.in data.path=demo/data.h5 train.epochs=$EPOCHS \
    train.baseline=on train.log_every=50 output.metrics=demo/metrics.jsonl | tee demo/train.log
echo "demo: trained in $(( $(date +%s) - start )) s on $(nproc) cores"
echo
echo "test metrics (leave-one-out, full ranking over all items):"
sed -n 's/^eval test epoch [0-9]* step [0-9]*: \(HR@1 [^ ]*\) \(HR@10 [^ ]*\).*\(NDCG@10 [^ ]*\).*/  HSTU          \2  \3/p;
        s/^eval test-popular epoch [0-9]* step [0-9]*: \(HR@1 [^ ]*\) \(HR@10 [^ ]*\).*\(NDCG@10 [^ ]*\).*/  most popular  \2  \3/p' demo/train.log
if [ $# -lt 1 ]; then
    echo "(synthetic data draws every item independently from a Zipf popularity, so the"
    echo " most-popular list is the best possible predictor there; give a ratings.csv to"
    echo " see the model beat it, e.g. ../shared/data/ml-latest-small/ratings.csv)"
fi
echo "metrics: demo/metrics.jsonl; logs: demo/train.log, demo/data.log, demo/build.log"
