#!/usr/bin/env bash
# plan_speed: how long the balancer takes at many ranks. Every rank runs
# parallel.balance's assignment of the global batch each step (the
# planner, src/train/planner.c), so at thousands of ranks its time is part
# of every step. `freescale plan` runs none, lpt and kk over S simulated
# steps at each rank count; this times it (the whole process, median of
# RUNS) for this tree's ./freescale (A) and, when given, another build's
# binary (B, e.g. bench/compare.sh's cached build of an earlier commit:
# ${TMPDIR:-/tmp}/freescale-compare/REV/freescale), interleaved A B A B,
# and prints the medians and the ratio A/B, with the planner's output of
# each (identical plans are checked: same bubbles).
#
#   bench/plan_speed.sh [B_FREESCALE]
#   PLAN_RANKS (default 1024,4096), PLAN_BATCH (32 per rank), PLAN_STEPS (5),
#   PLAN_RUNS (3), PLAN_LENGTHS (pareto:20,1.1: heavy-tailed histories)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
A=./freescale
B=${1:-}
[ -x "$A" ] || { echo "plan_speed: build ./freescale first (make)" >&2; exit 1; }
[ -z "$B" ] || [ -x "$B" ] || { echo "plan_speed: $B is not an executable" >&2; exit 1; }
RANKS=${PLAN_RANKS:-1024,4096}
BATCH=${PLAN_BATCH:-32}
STEPS=${PLAN_STEPS:-5}
RUNS=${PLAN_RUNS:-3}
LEN=${PLAN_LENGTHS:-pareto:20,1.1}
W=$(mktemp -d "${TMPDIR:-/tmp}/plan_speed.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# run BIN OUT: seconds of one plan run (its output to OUT)
run() {
    local t0 t1
    t0=$(date +%s.%N)
    "$1" plan input/tiny.in data.max_seq_len=4096 --lengths "$LEN" --batch-per-rank "$BATCH" \
        --ranks "$RANKS" --steps "$STEPS" > "$2" 2>&1 || { cat "$2" >&2; exit 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "plan_speed: ranks $RANKS, $BATCH sequences per rank, $STEPS steps, lengths $LEN, $RUNS runs"
for i in $(seq "$RUNS"); do
    run "$A" "$W/a.out" >> "$W/a.t"
    [ -n "$B" ] && run "$B" "$W/b.out" >> "$W/b.t"
done
ta=$(median < "$W/a.t")
echo "A ($A): median $(printf '%.2f' "$ta") s"
grep -E '^ +[0-9]+ |^ +(lpt|kk) ' "$W/a.out"
if [ -n "$B" ]; then
    tb=$(median < "$W/b.t")
    echo "B ($B): median $(printf '%.2f' "$tb") s"
    echo "A/B: $(echo "$ta / $tb" | bc -l | xargs printf '%.3f')"
    rows() { grep -E '^ +[0-9]+ |^ +(lpt|kk) ' "$1"; }
    if cmp -s <(rows "$W/a.out") <(rows "$W/b.out"); then
        echo "plans: identical bubbles"
    else
        echo "plans: DIFFER"
        diff <(rows "$W/a.out") <(rows "$W/b.out") | head
    fi
fi
