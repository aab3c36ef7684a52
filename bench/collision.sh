#!/bin/sh
# collision: how many of the next step's rows this step's update touches
# under parallel.overlap = prefetch (doc/overlap.md), on the data the
# quality benchmarks use: MovieLens latest-small (imported from
# ../shared/data; skipped with a message when absent) with
# input/mls-hstu.in, and data of ML-1M's shape (6040 users, 3416 items,
# lognormal lengths, as bench/compare.sh makes it) with input/ml1m-hstu.in
# and input/ml1m-sasrec.in (and HSTU with in-batch negatives, which look up
# only the batch's own items). Prints per run the median over progress lines
# of the collision fraction (colliding / looked-up unique rows, summed over
# ranks), rows prefetched and rows late per step.
#
#   bench/collision.sh [RATINGS_CSV] [NP] [STEPS]   (defaults: ../shared/data/
#                                          ml-latest-small/ratings.csv, 2, 40)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "collision: $FS not built"; exit 1; }
DATA=${1:-$TOP/../shared/data/ml-latest-small/ratings.csv}
NP=${2:-2}
STEPS=${3:-40}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-collision.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
field() { sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
run() { # NAME INPUT DATA [overrides]
    name=$1 in=$2 h5=$3; shift 3
    mpirun -np "$NP" "$FS" train "$TOP/input/$in" data.path="$h5" parallel.overlap=prefetch \
        train.max_steps="$STEPS" train.log_every=2 train.eval_every=0 train.final_eval=off \
        output.metrics="$W/$name.jsonl" "$@" > "$W/log" 2>&1 ||
        { echo "collision: $name failed:"; tail -n 20 "$W/log"; exit 1; }
    # the first line (no prefetch yet) and the last (nothing after it) left out
    c=$(field "$W/$name.jsonl" collision | sed '1d;$d' | median)
    a=$(field "$W/$name.jsonl" rows_prefetched | sed '1d;$d' | median)
    l=$(field "$W/$name.jsonl" rows_late | sed '1d;$d' | median)
    printf '%-28s %10s %14s %10s\n' "$name" "$c" "$a" "$l"
}
echo "machine: $(nproc) CPUs; $NP ranks, $STEPS steps per run"
printf '%-28s %10s %14s %10s\n' run collision "prefetched/step" "late/step"
if [ -f "$DATA" ]; then
    "$FS" data import --format csv "$DATA" -o "$W/mls.h5" > /dev/null || exit 1
    run "ml-latest-small HSTU" mls-hstu.in "$W/mls.h5"
else
    echo "ml-latest-small: skipped ($DATA not found)"
fi
"$FS" data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps --seed 1 \
    -o "$W/ml1m.h5" > /dev/null || exit 1
run "ML-1M shape HSTU" ml1m-hstu.in "$W/ml1m.h5"
run "ML-1M shape SASRec" ml1m-sasrec.in "$W/ml1m.h5"
run "ML-1M shape HSTU in-batch" ml1m-hstu.in "$W/ml1m.h5" train.negatives_from=in_batch
