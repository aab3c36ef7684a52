#!/bin/sh
# bench_traps: a benchmark stopped by a signal leaves no scratch folder.
#   - every bench/*.sh that removes its folder at exit (trap ... EXIT) also
#     exits on SIGINT and SIGTERM (trap 'exit 130' INT, trap 'exit 143'
#     TERM), so that the EXIT trap runs: sh (dash) and bash run no EXIT trap
#     when a signal's default action ends them;
#   - bench/stream_mls.sh (its folder from bench/mls_common.sh), started in
#     its own process group and sent SIGTERM there while it trains (as a
#     batch system or Ctrl-C stops a job): it ends with no
#     $TMPDIR/fs-mls.* left.
. "$(dirname "$0")/lib.sh"

for f in "$TOP_SRCDIR"/bench/*.sh; do
    grep -q "trap '.*' EXIT" "$f" || continue
    if grep -q "trap 'exit 130' INT" "$f" && grep -q "trap 'exit 143' TERM" "$f"; then :; else
        fail "$(basename "$f"): trap ... EXIT without trap 'exit 130' INT and trap 'exit 143' TERM"
    fi
done
pass "every bench script's EXIT trap runs on INT and TERM too"

need_mpirun
command -v setsid >/dev/null || { echo "no setsid: the signal part skipped"; finish; }
mkdir "$T/tmp"
# the drift cut needs no ml-latest-small ($T/none: its import skipped)
TMPDIR="$T/tmp" FREESCALE="$FS" MPIRUN="$MPIRUN" NP=1 \
    setsid sh "$TOP_SRCDIR/bench/stream_mls.sh" --cut drift --quick "$T/none" >"$T/out" 2>&1 &
pid=$!
# "$W/means" is written after the traps are set
n=0
until ls "$T"/tmp/fs-mls.*/means >/dev/null 2>&1 || [ $n -ge 600 ]; do sleep 0.1; n=$((n + 1)); done
[ $n -lt 600 ] || fail "bench/stream_mls.sh made no scratch folder: $(tail -n 3 "$T/out")"
sleep 0.5 # into data gen or the training
kill -TERM -- "-$pid" 2>/dev/null
wait "$pid"
rc=$?
n=0 # and every process of its group (mpirun, the ranks) gone
while kill -0 -- "-$pid" 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
left=$(ls -d "$T"/tmp/fs-mls.* 2>/dev/null)
[ -z "$left" ] && pass "stream_mls.sh stopped by SIGTERM (exit $rc): its scratch folder removed" ||
    fail "stream_mls.sh stopped by SIGTERM (exit $rc) left $left"
finish
