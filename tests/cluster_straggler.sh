#!/bin/sh
# cluster_straggler: a slow link is not a slow rank. Two nodes of one rank
# each (scripts/cluster.sh), node 2's link limited to 2mbit; with
# parallel.balance_adapt = on the ranks' busy compute stays even while
# they wait inside MPI for most of the step, so adapt keeps the split (no
# "rank speeds updated": its predicted gain is measured against the whole
# step, waits included) and says once that the run is bound by
# communication; on a loaded machine too, where a rank descheduled takes
# longer in wall time but not in CPU time, which adapt measures beside it
# (doc/balance.md). With fast links and rank 1 computing 20x slower
# (debug.slow_rank), adapt re-weights first (once the split is even, the
# tiny run may well be bound by communication, and adapt may say so).
# bench/straggler.sh measures the bubble (doc/scaling.md). Skips (77)
# where network namespaces are refused; waits its turn for the cluster.
. "$(dirname "$0")/lib.sh"
need_mpirun
need_cluster 2
tiny_data
COMMON="data.path=$T/tiny.h5 device.type=cpu model.dropout=0 train.epochs=100 train.max_steps=12
train.log_every=2 train.eval_every=0 train.final_eval=off parallel.balance_adapt=on"
run() { # NAME ARGS...
    n=$1; shift
    "$CL" mpirun --hostfile "$FREESCALE_CLUSTER_DIR/hostfile" -np 2 --map-by node "$FS" train "$IN" \
        $COMMON "$@" output.metrics="$T/$n.jsonl" > "$T/$n.log" 2>&1 ||
        fail "$n: $(tail -n 5 "$T/$n.log")"
}
"$CL" rate 2 2mbit > /dev/null || fail "cluster.sh rate 2 2mbit"
run slow
"$CL" rate 2 off > /dev/null || fail "cluster.sh rate 2 off"
run slowcpu debug.slow_rank=1:20
if grep -q "the run is bound by communication" "$T/slow.log"; then
    pass "slow link: $(grep -o 'wait inside MPI for [0-9]*% of the step (busy compute within [0-9]*%' "$T/slow.log")"
else
    fail "slow link: no notice of a communication-bound run: $(grep balance_adapt "$T/slow.log" | head -n 2)"
fi
[ "$(grep -c 'rank speeds updated' "$T/slow.log")" -eq 0 ] && pass "slow link: the split is kept" ||
    fail "slow link: adapt moved work: $(grep 'rank speeds updated' "$T/slow.log" | head -n 1)"
grep -q 'rank speeds updated' "$T/slowcpu.log" && pass "slow rank: adapt re-weights" ||
    fail "slow rank: adapt did not re-weight: $(grep balance_adapt "$T/slowcpu.log" | head -n 2)"
first=$(grep -m 1 'balance_adapt: ' "$T/slowcpu.log")
case $first in
*"rank speeds updated"*) pass "slow rank: adapt's first word is the re-weighting" ;;
*) fail "slow rank: adapt spoke first of something else: $first" ;;
esac
finish
