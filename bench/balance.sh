#!/bin/sh
# bench/balance.sh: real training at 2 ranks on heavy-tailed synthetic data
# (lognormal lengths, data.max_seq_len 1024) with parallel.balance=none
# against kk, and against the planner's prediction for the same setting;
# then a slow rank (debug.slow_rank=1:2) with balance_adapt off and on.
#
#   bench/balance.sh [STEPS] [BATCH]      defaults 60 steps, 32 sequences
#
# Prints per run the mean bubble fraction and imbalance over the progress
# intervals after the first (warm-up), the median samples/s, and the
# reductions 1 - bubble_kk / bubble_none; and the floor, the bubble of
# sequences that all have the same length (the mean length of the heavy-
# tailed data), which is this machine's timing noise. Temporary files under
# ${TMPDIR:-/tmp}.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "balance: $FS not built"; exit 1; }
STEPS=${1:-60}
BATCH=${2:-32}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-balance.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
"$FS" data gen --users 3000 --items 3000 --length lognormal:5.0,1.2 --max-length 4000 \
    --timestamps --seed 5 -o "$W/heavy.h5" >/dev/null 2>&1 || exit 1
IN="$TOP/input/ml1m-sasrec.in"
DATA="data.path=$W/heavy.h5 data.max_seq_len=1024"
# the cost model of this machine, as a user would fit it (2 ranks per node)
CM=$("$FS" calibrate "$IN" $DATA --ranks-per-node 2 2>/dev/null | sed -n 's/^cost_model = //p')
[ -n "$CM" ] || { echo "balance: freescale calibrate failed"; exit 1; }
# a progress line every LOG steps: at least 3 intervals after the first
LOG=$((STEPS / 6)); [ "$LOG" -ge 1 ] || LOG=1
COMMON="$DATA parallel.cost_model=$CM train.batch_size=$BATCH train.max_steps=$STEPS train.log_every=$LOG"
echo "data: 3000 users, lognormal(5.0, 1.2) lengths truncated to 1024; SASRec d=50 2 layers;"
echo "cost model (freescale calibrate): $CM"
echo "      2 ranks, $BATCH sequences per step, $STEPS steps; machine: $(nproc) CPUs"

# run NAME OVERRIDES...: sets BUBBLE IMB SPS
run() {
    name=$1; shift
    mpirun -np 2 "$FS" train "$IN" $COMMON output.metrics="$W/m.jsonl" "$@" > "$W/log" 2>&1 ||
        { echo "balance: $name failed"; tail -n 20 "$W/log"; exit 1; }
    # intervals after the first one (all of them when there is only one)
    sed -n 's/.*"event":"train".*"samples_per_s":\([^,]*\),.*"bubble":\([^,]*\),"imbalance":\([^,]*\),.*/\1 \2 \3/p' \
        "$W/m.jsonl" > "$W/all"
    if [ "$(wc -l < "$W/all")" -gt 1 ]; then tail -n +2 "$W/all" > "$W/v"; else cp "$W/all" "$W/v"; fi
    BUBBLE=$(awk '{ s += $2 } END { printf "%.4f", NR ? s / NR : 0 }' "$W/v")
    IMB=$(awk '{ s += $3 } END { printf "%.3f", NR ? s / NR : 0 }' "$W/v")
    SPS=$(cut -d' ' -f1 "$W/v" | sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }')
    printf '%-28s bubble %6.2f%%  imbalance %5.3f  samples/s %7s\n' "$name" \
        "$(awk -v b="$BUBBLE" 'BEGIN { print 100 * b }')" "$IMB" "$SPS"
}
run "none" parallel.balance=none
B0=$BUBBLE S0=$SPS
run "kk" parallel.balance=kk
B1=$BUBBLE S1=$SPS
awk -v a="$B0" -v b="$B1" -v s0="$S0" -v s1="$S1" 'BEGIN {
    if (a > 0) printf "measured: kk removes %.1f%% of the bubble of none; samples/s x%.2f\n", 100 * (1 - b / a), s1 / s0
    else printf "measured: no bubble without balancing; samples/s x%.2f\n", s1 / s0 }'
if "$FS" plan "$IN" $COMMON --ranks 2 --batch-per-rank $((BATCH / 2)) --csv "$W/plan.csv" > "$W/plan.log" 2>&1; then
    awk -F, '$2 == "none" { n = $3 } $2 == "kk" { k = $3; r = $5 } END {
        printf "planner (same data, cost model, 2 ranks x %d): bubble none %.2f%%, kk %.2f%%, reduction %.1f%%\n", '"$((BATCH / 2))"', 100 * n, 100 * k, 100 * r }' "$W/plan.csv"
else
    echo "planner: not available ($(tail -n 1 "$W/plan.log"))"
fi
# the floor: sequences of one length, where no balancer has anything to do;
# what remains is timing noise of this machine
"$FS" data gen --users 3000 --items 3000 --length fixed:260 --timestamps --seed 5 \
    -o "$W/fixed.h5" >/dev/null 2>&1 || exit 1
run "floor (equal lengths, none)" parallel.balance=none data.path="$W/fixed.h5"
BF=$BUBBLE
# above the floor; a kk bubble at or below the floor is all noise (a share
# above 100% would only measure the noise)
awk -v a="$B0" -v b="$B1" -v f="$BF" 'BEGIN {
    if (a <= f) printf "above the floor: none is within the noise (%.2f%% <= %.2f%%): nothing to remove at %d steps\n", 100 * a, 100 * f, '"$STEPS"'
    else if (b <= f) printf "above the floor: kk is within the noise (%.2f%% <= %.2f%%): it removes all the bubble that balancing can remove\n", 100 * b, 100 * f
    else printf "above the floor: kk removes %.1f%% of the bubble that balancing can remove\n", 100 * (1 - (b - f) / (a - f)) }'
echo "slow rank: debug.slow_rank=1:2 (rank 1 computes twice as slowly), kk"
run "balance_adapt=off" debug.slow_rank=1:2
B2=$BUBBLE
run "balance_adapt=on" debug.slow_rank=1:2 parallel.balance_adapt=on
B3=$BUBBLE
awk -v a="$B2" -v b="$B3" 'BEGIN { if (a > 0) printf "adaptation removes %.1f%% of the slow rank'"'"'s bubble\n", 100 * (1 - b / a) }'
