#!/bin/sh
# bench/split_long.sh: long user histories. Real HSTU training on
# heavy-tailed synthetic data (pareto lengths up to 8192, data.max_seq_len
# 8192) with parallel.balance=none, kk, and kk with parallel.split_long=auto
# (long sequences cut into chunks on several ranks), in one invocation, and
# the planner's prediction ('freescale plan') for the same setting.
#
#   bench/split_long.sh [STEPS] [BATCH] [RANKS]   defaults 40 steps, 64 sequences, 2 ranks
#
# The cost model is fitted on this machine first (freescale calibrate), as
# a user would. Prints per run the mean bubble fraction and imbalance over
# the progress intervals after the first (warm-up), the median samples/s and
# the keys/values sent per step; then the reductions 1 - bubble_split /
# bubble_none and 1 - bubble_split / bubble_kk, and the floor: the bubble
# of equal lengths (the mean length of the data), this machine's timing
# noise. More ranks than cores time-share the cores and measure the sharing,
# not the balance. Temporary files under ${TMPDIR:-/tmp}.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "split_long: $FS not built"; exit 1; }
STEPS=${1:-40}
BATCH=${2:-64}
NP=${3:-2}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-split.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
[ "$NP" -gt "$(nproc)" ] && export OMPI_MCA_rmaps_base_oversubscribe=1
"$FS" data gen --users 2000 --items 3000 --length pareto:40,1.1 --max-length 8192 \
    --timestamps --seed 5 -o "$W/long.h5" >/dev/null 2>&1 || exit 1
IN="$TOP/input/mls-hstu.in"
DATA="data.path=$W/long.h5 data.max_seq_len=8192"
CM=$("$FS" calibrate "$IN" $DATA --ranks-per-node "$NP" --points 5 --reps 2 2>/dev/null |
    sed -n 's/^cost_model = //p')
[ -n "$CM" ] || { echo "split_long: freescale calibrate failed"; exit 1; }
# a progress line every LOG steps: at least 3 intervals after the first
LOG=$((STEPS / 4)); [ "$LOG" -ge 1 ] || LOG=1
[ "$LOG" -gt 10 ] && LOG=10
COMMON="$DATA parallel.cost_model=$CM train.batch_size=$BATCH train.max_steps=$STEPS
train.log_every=$LOG train.eval_every=0 train.final_eval=off"
echo "data: 2000 users, pareto(40, 1.1) lengths up to 8192; HSTU d=50 2 layers (input/mls-hstu.in)"
echo "cost model (freescale calibrate): $CM"
echo "      $NP ranks, $BATCH sequences per step, $STEPS steps; machine: $(nproc) CPUs"

# run NAME OVERRIDES...: sets BUBBLE IMB SPS
run() {
    name=$1; shift
    mpirun -np "$NP" "$FS" train "$IN" $COMMON output.metrics="$W/m.jsonl" "$@" > "$W/log" 2>&1 ||
        { echo "split_long: $name failed"; tail -n 20 "$W/log"; exit 1; }
    grep '"event":"train"' "$W/m.jsonl" > "$W/all" # after the first interval, if more
    if [ "$(wc -l < "$W/all")" -gt 1 ]; then tail -n +2 "$W/all" > "$W/lines"; else cp "$W/all" "$W/lines"; fi
    sed -n 's/.*"samples_per_s":\([^,]*\),.*"bubble":\([^,]*\),"imbalance":\([^,]*\),.*/\1 \2 \3/p' \
        "$W/lines" > "$W/v"
    BUBBLE=$(awk '{ s += $2 } END { printf "%.4f", NR ? s / NR : 0 }' "$W/v")
    IMB=$(awk '{ s += $3 } END { printf "%.3f", NR ? s / NR : 0 }' "$W/v")
    SPS=$(cut -d' ' -f1 "$W/v" | sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }')
    KV=$(grep -o '"kv_bytes":[0-9.e+]*' "$W/lines" | cut -d: -f2 |
        awk '{ s += $1 } END { if (NR) printf "  keys/values %.2f MB/step", s / NR / 1e6 }')
    printf '%-30s bubble %6.2f%%  imbalance %5.3f  samples/s %7s%s\n' "$name" \
        "$(awk -v b="$BUBBLE" 'BEGIN { print 100 * b }')" "$IMB" "$SPS" "$KV"
}
run "none" parallel.balance=none
B0=$BUBBLE S0=$SPS
run "kk" parallel.balance=kk
B1=$BUBBLE S1=$SPS
run "kk, split_long=auto" parallel.balance=kk parallel.split_long=auto
B2=$BUBBLE S2=$SPS
awk -v a="$B0" -v b="$B1" -v c="$B2" -v s0="$S0" -v s1="$S1" -v s2="$S2" 'BEGIN {
    if (a > 0 && b > 0) printf "measured: kk removes %.1f%% of the bubble of none; kk with splitting %.1f%% (and %.1f%% of kk'"'"'s)\n", 100 * (1 - b / a), 100 * (1 - c / a), 100 * (1 - c / b)
    else printf "measured: bubbles none %.2f%%, kk %.2f%%, kk with splitting %.2f%%\n", 100 * a, 100 * b, 100 * c
    printf "          samples/s x%.2f (kk) and x%.2f (kk with splitting) against none\n", s1 / s0, s2 / s0 }'
if "$FS" plan "$IN" $COMMON parallel.split_long=auto --ranks "$NP" \
    --batch-per-rank $((BATCH / NP)) --csv "$W/plan.csv" > "$W/plan.log" 2>&1; then
    awk -F, '$2 == "none" { n = $3 } $2 == "kk-whole" { w = $3 } $2 == "kk" { k = $3 } END {
        printf "planner (same data, cost model, %d ranks x %d): bubble none %.2f%%, kk %.2f%%, kk with splitting %.2f%%\n", '"$NP"', '"$((BATCH / NP))"', 100 * n, 100 * w, 100 * k }' "$W/plan.csv"
else
    echo "planner: not available ($(tail -n 1 "$W/plan.log"))"
fi
# the floor: one length for every sequence (the data's mean), nothing to balance
MEAN=$("$FS" data stats "$W/long.h5" 2>/dev/null | sed -n 's/^length mean: \([0-9]*\).*/\1/p')
"$FS" data gen --users 2000 --items 3000 --length "fixed:${MEAN:-200}" --timestamps --seed 5 \
    -o "$W/fixed.h5" >/dev/null 2>&1 || exit 1
run "floor (equal lengths, none)" parallel.balance=none data.path="$W/fixed.h5"
