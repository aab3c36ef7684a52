#!/usr/bin/env bash
# exact_sums: the cost of train.exact_sums = on against off (doc/training.md,
# "The same bits on any number of ranks").
#
#   bench/exact_sums.sh
#   EX_RUNS=5 EX_NP=2 EX_STEPS=24 EX_INPUT=input/ml1m-sasrec.in bench/exact_sums.sh model.dim=64
#
# Data of ML-1M's shape (6040 users, 3416 items, lognormal(4.6, 1.0)
# lengths, as bench/bench_train.sh), EX_INPUT (default input/ml1m-hstu.in)
# and the overrides given, on EX_NP ranks (default 2), EX_STEPS steps (default 24), no
# evaluation: EX_RUNS (default 3) interleaved pairs off, on. Prints the
# median milliseconds per step of each (the progress intervals after the
# first), the median of the pairs' ratios on / off, the phases that grew
# (median ms per step: backward, grad exchange, all-reduce, forward), the
# gradient bytes a step each sends (the dense all-reduce's and the sparse
# exchange's), and the largest relative difference of the losses (exact
# sums round differently from float sums: close, not equal). Never
# asserted: a loaded machine shows in the spread of the pairs.
set -eu
cd "$(dirname "$0")/.."
make -s freescale >/dev/null
MPIRUN=${MPIRUN:-mpirun}
NP=${EX_NP:-2} RUNS=${EX_RUNS:-3} STEPS=${EX_STEPS:-24} IN=${EX_INPUT:-input/ml1m-hstu.in}
T=$(mktemp -d "${TMPDIR:-/tmp}/fs-exact.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
./freescale data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps --seed 3 \
    -o "$T/ml.h5" >/dev/null 2>&1
field() { # FILE NAME: the field's values of the progress lines after the first
    sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1" | awk 'NR > 1'
}
run() { # TAG ARGS...
    tag=$1; shift
    "$MPIRUN" -np "$NP" ./freescale train "$IN" data.path="$T/ml.h5" \
        train.max_steps="$STEPS" train.log_every=4 train.eval_every=0 train.final_eval=off \
        output.metrics="$T/$tag.jsonl" "$@" >"$T/$tag.out" 2>&1
    field "$T/$tag.jsonl" interval_s | awk '{ s += $1; n++ } END { printf "%.2f\n", 1000 * s / (4 * n) }' >> "$T/$tag.ms"
    for ph in forward backward grad_exchange allreduce; do
        field "$T/$tag.jsonl" "${ph}_ms" | awk '{ s += $1; n++ } END { printf "%.2f\n", s / n }' >> "$T/$tag.$ph"
    done
}
for r in $(seq "$RUNS"); do
    run off "$@"
    run on train.exact_sums=on "$@"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
a=$(median < "$T/off.ms") b=$(median < "$T/on.ms")
ratio=$(paste "$T/on.ms" "$T/off.ms" | awk '{ print $1 / $2 }' | median)
echo "step time, ML-1M shape, $IN, $NP ranks, $STEPS steps, $RUNS pairs${*:+, $*}:"
echo "  exact_sums = off $a ms/step  (runs: $(tr '\n' ' ' < "$T/off.ms"))"
echo "  exact_sums = on  $b ms/step  (runs: $(tr '\n' ' ' < "$T/on.ms"))"
echo "  on / off: median of the pairs' ratios $ratio"
for ph in forward backward grad_exchange allreduce; do
    echo "  $ph: off $(median < "$T/off.$ph") ms, on $(median < "$T/on.$ph") ms"
done
# bytes a step: the sparse gradients (grads_bytes, sent by each rank), the
# dense arena (the model's gradient floats, from the model line) x 4 or x 8 EXACT_LIMBS + 8
gb() { field "$1" grads_bytes | awk '{ s += $1; n++ } END { printf "%.0f\n", s / n }'; }
echo "  sparse gradient bytes sent a step per rank: off $(gb "$T/off.jsonl"), on $(gb "$T/on.jsonl")"
ng=$(sed -n 's/^train.exact_sums: \([0-9]*\) dense gradient values.*/\1/p' "$T/on.out" | head -n 1)
[ -n "$ng" ] && echo "  dense all-reduce bytes: off $((4 * ng)), on $((40 * ng + 8)) ($ng gradient floats)"
sed -n 's/.*"event":"train".*"loss":\([^,]*\),.*/\1/p' "$T/off.jsonl" > "$T/la"
sed -n 's/.*"event":"train".*"loss":\([^,]*\),.*/\1/p' "$T/on.jsonl" > "$T/lb"
paste "$T/la" "$T/lb" | awk '{ d = $1 - $2; d = d < 0 ? -d : d; r = d / ($1 < 0 ? -$1 : $1); m = r > m ? r : m }
    END { printf "  losses: largest relative difference on / off %.2g\n", m }'
