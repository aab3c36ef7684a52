#!/usr/bin/env bash
# scripts/demo.sh [ratings.csv]: one command from a fresh clone to a trained
# recommender. Installs the dependencies, builds, makes a dataset (imports
# a MovieLens-style ratings.csv when given one, else generates a synthetic
# one), trains HSTU on 2 ranks for about a minute, and prints the test
# HR@10 and NDCG@10 next to a most-popular-items baseline.
#   scripts/demo.sh ../shared/data/ml-latest-small/ratings.csv
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
freescale_install_deps
if [ ! -x ./freescale ]; then
    autoreconf -fi
    ./configure
    make -j2
fi
mkdir -p demo
if [ $# -ge 1 ]; then
    ./freescale data import --format csv "$1" -o demo/data.h5
    EPOCHS=40
else
    echo "no ratings.csv given: generating a synthetic dataset"
    ./freescale data gen --users 2000 --items 1500 --length lognormal:4.0,0.8 --zipf 1.0 \
        --timestamps --seed 7 -o demo/data.h5
    EPOCHS=15
fi
./freescale data stats demo/data.h5 | grep -E "^(users|items|events|length (p50|max))"
if [ "$(id -u)" -eq 0 ]; then # Open MPI refuses root unless told
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
[ "$(nproc)" -ge 2 ] || export OMPI_MCA_rmaps_base_oversubscribe=1
mpirun -np 2 ./freescale train input/mls-hstu.in data.path=demo/data.h5 train.epochs=$EPOCHS \
    train.baseline=on train.log_every=50 output.metrics=demo/metrics.jsonl | tee demo/train.log
echo
echo "test metrics (leave-one-out, full ranking over all items):"
sed -n 's/^eval test epoch [0-9]* step [0-9]*: \(HR@1 [^ ]*\) \(HR@10 [^ ]*\).*\(NDCG@10 [^ ]*\).*/  HSTU          \2  \3/p;
        s/^eval test-popular epoch [0-9]* step [0-9]*: \(HR@1 [^ ]*\) \(HR@10 [^ ]*\).*\(NDCG@10 [^ ]*\).*/  most popular  \2  \3/p' demo/train.log
if [ $# -lt 1 ]; then
    echo "(synthetic data draws every item independently from a Zipf popularity, so the"
    echo " most-popular list is the best possible predictor there; give a ratings.csv to"
    echo " see the model beat it, e.g. ../shared/data/ml-latest-small/ratings.csv)"
fi
echo "metrics: demo/metrics.jsonl; log: demo/train.log"
