#!/usr/bin/env bash
# dynamic: a dynamic item table (embedding.dynamic = on) against the dense
# one, and one shard's index (doc/embedding.md, "Dynamic tables").
#
#   bench/dynamic.sh                      # both parts
#   DYN_RUNS=5 DYN_NP=2 DYN_STEPS=24 DYN_ROWS="1e6 1e7" bench/dynamic.sh
#
# 1. Step time on data of ML-1M's shape (6040 users, 3416 items,
#    lognormal(4.6, 1.0) lengths, as bench/bench_train.sh), input/ml1m-hstu.in
#    on DYN_NP ranks (default 2), DYN_STEPS steps (default 24), no
#    evaluation: DYN_RUNS (default 5) interleaved pairs dense, dynamic; the
#    median milliseconds per step of each (the progress intervals after the
#    first), the median ratio dynamic / dense, and whether the losses are
#    identical (they must be: admit = 1, evict = none).
# 2. bench/bench_dyn at DYN_ROWS rows (default 1e6 1e7): inserts, hits and
#    misses per second of the index alone, and the owner's training lookups
#    (insertions with the rows' initialisation) per second.
# Never asserted: a loaded machine shows in the spread of the pairs.
set -eu
cd "$(dirname "$0")/.."
make -s freescale bench/bench_dyn >/dev/null
MPIRUN=${MPIRUN:-mpirun}
NP=${DYN_NP:-2} RUNS=${DYN_RUNS:-5} STEPS=${DYN_STEPS:-24}
T=$(mktemp -d "${TMPDIR:-/tmp}/fs-dyn.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
./freescale data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps --seed 3 \
    -o "$T/ml.h5" >/dev/null 2>&1
run() { # TAG ARGS...: ms per step (intervals after the first) into $T/TAG.ms
    tag=$1; shift
    "$MPIRUN" -np "$NP" ./freescale train input/ml1m-hstu.in data.path="$T/ml.h5" \
        train.max_steps="$STEPS" train.log_every=4 train.eval_every=0 train.final_eval=off \
        output.metrics="$T/$tag.jsonl" "$@" >"$T/$tag.out" 2>&1
    sed -n 's/.*"event":"train".*"interval_s":\([^,]*\),.*/\1/p' "$T/$tag.jsonl" |
        awk 'NR > 1 { s += $1; n++ } END { printf "%.2f\n", 1000 * s / (4 * n) }' >> "$T/$tag.ms"
}
for r in $(seq "$RUNS"); do
    run dense
    run dynamic embedding.dynamic=on
    sed -n 's/.*"event":"train".*"loss":\([^,]*\),.*/\1/p' "$T/dense.jsonl" > "$T/la"
    sed -n 's/.*"event":"train".*"loss":\([^,]*\),.*/\1/p' "$T/dynamic.jsonl" > "$T/lb"
    cmp -s "$T/la" "$T/lb" && echo identical >> "$T/same" || echo differ >> "$T/same"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
a=$(median < "$T/dense.ms") b=$(median < "$T/dynamic.ms")
ratio=$(paste "$T/dynamic.ms" "$T/dense.ms" | awk '{ print $1 / $2 }' | median)
echo "step time, ML-1M shape, HSTU, $NP ranks, $STEPS steps, $RUNS pairs:"
echo "  dense   $a ms/step  (runs: $(tr '\n' ' ' < "$T/dense.ms"))"
echo "  dynamic $b ms/step  (runs: $(tr '\n' ' ' < "$T/dynamic.ms"))"
echo "  dynamic / dense: median of the pairs' ratios $ratio; losses $(sort -u "$T/same" | tr '\n' ' ')"
grep -m1 "dynamic table 'items'" "$T/dynamic.out" | sed 's/^/  /'
echo "one shard's index and training lookups (bench/bench_dyn, one thread):"
bench/bench_dyn ${DYN_ROWS:-1e6 1e7}
