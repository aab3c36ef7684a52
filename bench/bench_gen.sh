#!/bin/sh
# bench_gen: throughput and memory of 'freescale data gen'.
#
#   bench/bench_gen.sh [GEN OPTIONS...]
#
# Default workload: --users 1e5 --items 1e6 --length lognormal:4.1,1.0, about
# 1e7 events (mean length e^(4.1 + 1/2) = 99.5). Options given replace that
# workload (e.g. --users 1e5 --items 1e6 --length fixed:100). Prints events,
# seconds (median of REPS=3 runs), events/s and peak RSS for the default
# Zipf(1) run and, measured in
# the same invocation, two baselines with their ratios:
#   - the same workload with --zipf 0 (uniform ids: the Zipf sampler's cost);
#   - dd writing the uncompressed item ids' byte count (an I/O floor).
# Then bounded memory: peak RSS at a tenth of the users (about 1e6 events)
# against the full run; they should differ by little more than the writer's
# offsets (8 bytes per user). Temporary files go under ${TMPDIR:-/tmp}.
set -u
FS=${FREESCALE:-$(cd "$(dirname "$0")/.." && pwd)/freescale}
[ -x "$FS" ] || { echo "bench_gen: $FS not built (make freescale)"; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-gen.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up

if [ $# -gt 0 ]; then
    SPEC="$*"
else
    SPEC="--users 1e5 --items 1e6 --length lognormal:4.1,1.0"
fi
SMALL=$(echo "$SPEC" | awk '{ for (i = 1; i <= NF; i++) if ($i == "--users") { $(i + 1) = int($(i + 1) / 10) } print }')

HAVE_TIME=0
/usr/bin/time -f %M true >/dev/null 2>&1 && HAVE_TIME=1

now() { date +%s.%N; }

REPS=${REPS:-3}

# run NAME ARGS...: run data gen REPS times, print one line with the median
# time; sets EVENTS SECS RATE RSS.
run() {
    name=$1; shift
    : > "$W/times"
    r=0
    while [ $r -lt "$REPS" ]; do
        rm -f "$W/out.h5"
        t0=$(now)
        if [ "$HAVE_TIME" = 1 ]; then
            /usr/bin/time -f %M -o "$W/rss" "$FS" data gen "$@" -o "$W/out.h5" > "$W/log" 2>&1
        else
            "$FS" data gen "$@" -o "$W/out.h5" > "$W/log" 2>&1
        fi
        rc=$?
        t1=$(now)
        [ $rc -eq 0 ] || { echo "bench_gen: data gen $* failed:"; cat "$W/log"; exit 1; }
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >> "$W/times"
        r=$((r + 1))
    done
    EVENTS=$(sed -n 's/.* users, [0-9]* items, \([0-9]*\) events.*/\1/p' "$W/log")
    SECS=$(sort -n "$W/times" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    RATE=$(awk -v e="$EVENTS" -v s="$SECS" 'BEGIN { printf "%.3g", e / s }')
    RSS=n/a
    [ "$HAVE_TIME" = 1 ] && RSS=$(awk '{ printf "%.1f MiB", $1 / 1024 }' "$W/rss")
    SIZE=$(stat -c %s "$W/out.h5")
    printf '%-22s events %-10s seconds %-7s events/s %-9s peak RSS %-10s file %.1f MiB\n' \
        "$name" "$EVENTS" "$SECS" "$RATE" "$RSS" "$(awk -v s="$SIZE" 'BEGIN { print s / 1048576 }')"
}

echo "bench_gen: $FS"
echo "workload: $SPEC"
echo "machine: $(nproc) CPUs"

run "gen zipf 1" $SPEC
ZIPF_SECS=$SECS ZIPF_RSS=$RSS FULL_EVENTS=$EVENTS
run "gen zipf 1 +ts+act" $SPEC --timestamps --actions
run "baseline: zipf 0" $SPEC --zipf 0
UNI_SECS=$SECS

# dd of the raw item ids' bytes into the page cache, best of 3 (noisy)
BYTES=$((FULL_EVENTS * 8))
DD_SECS=
for i in 1 2 3; do
    t0=$(now)
    dd if=/dev/zero of="$W/dd.bin" bs=1048576 count=$((BYTES / 1048576 + 1)) 2>/dev/null ||
        { echo "bench_gen: dd failed"; exit 1; }
    t1=$(now)
    rm -f "$W/dd.bin"
    DD_SECS=$(awk -v a="$t0" -v b="$t1" -v m="$DD_SECS" \
        'BEGIN { s = b - a; if (m != "" && m < s) s = m; printf "%.3f", s }')
done
printf '%-22s bytes  %-10s seconds %-7s (best of 3)\n' "baseline: dd floor" "$BYTES" "$DD_SECS"

awk -v z="$ZIPF_SECS" -v u="$UNI_SECS" -v d="$DD_SECS" 'BEGIN {
    printf "ratio zipf 1 / zipf 0: %.2f (cost of Zipf sampling)\n", z / u
    printf "ratio zipf 1 / dd of the raw item ids: %.1f\n", z / d
}'

echo "bounded memory:"
run "gen 1/10 users" $SMALL
SMALL_EVENTS=$EVENTS SMALL_RSS=$RSS
echo "peak RSS: $SMALL_RSS at $SMALL_EVENTS events, $ZIPF_RSS at $FULL_EVENTS events" \
    "(offsets: 8 bytes per user)"
