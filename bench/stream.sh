#!/usr/bin/env bash
# stream: the history lookup of streaming training per step (a batch of
# users, each user's newest events before the last window) as the window
# files grow from 1 to 10 to 100 (doc/data.md, "Window files").
#
#   bench/stream.sh
#   ST_USERS=10000 ST_BATCH=256 ST_STEPS=8 ST_RUNS=3 ST_MAXLEN=200 bench/stream.sh
#
# One stream of 100 days (data gen --stream: ST_USERS users, 30% active a
# day, 1..8 events, 2000 items + 20 new a day, drift 0.01) written three
# ways, the same events: one file, 10 files of 10 days, 100 files of a day.
# bench/bench_stream looks up the histories (data.max_seq_len ST_MAXLEN)
# of ST_STEPS batches of ST_BATCH users active on the last day, before
# that day; with data.history_files 0 (all) on 1, 10 and 100 files, and
# with history_files 10 on 100 files. ST_RUNS interleaved rounds; the
# median of each configuration's per-run medians (milliseconds a step),
# and the ratio to one file. Never asserted.
set -eu
cd "$(dirname "$0")/.."
make -s freescale bench/bench_stream >/dev/null
U=${ST_USERS:-10000} BATCH=${ST_BATCH:-256} STEPS=${ST_STEPS:-8} RUNS=${ST_RUNS:-3}
MAXLEN=${ST_MAXLEN:-200}
T=$(mktemp -d "${TMPDIR:-/tmp}/fs-stream.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
G="--stream --days 100 --users $U --items 2000 --new-items-per-day 20 --drift 0.01 --active 0.3 --per-day 1,8 --seed 3"
./freescale data gen $G -o "$T/one.h5" --split-days "$T/d1" >/dev/null
./freescale data gen $G --split-days "$T/d10" --file-days 10 >/dev/null
BEFORE=$((1577836800 + 99 * 86400)) # the start of day 99: its users' histories
LAST="$T/d1/day-0099.h5"
run() { # TAG SPEC HISTORY_FILES
    ./bench/bench_stream "$2" "$LAST" "$BEFORE" "$3" "$BATCH" "$STEPS" "$MAXLEN" > "$T/out"
    echo "$1 $(cat "$T/out")" >> "$T/all"
}
for r in $(seq "$RUNS"); do
    run f1 "$T/one.h5" 0
    run f10 "$T/d10/day-*.h5" 0
    run f100 "$T/d1/day-*.h5" 0
    run f100h10 "$T/d1/day-*.h5" 10
done
echo "# $(date -u +%F), $(nproc) cores, $U users, $(du -sh "$T/one.h5" | cut -f1) one file;" \
    "batch $BATCH, $STEPS steps, max_len $MAXLEN, $RUNS rounds"
awk '{ for (i = 2; i < NF; i += 2) v[$1, $i] = v[$1, $i] " " $(i + 1); tags[$1] = 1 }
     function med(s,   a, n, i, j, t) { n = split(s, a, " ");
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return a[int((n + 1) / 2)] }
     END { base = med(v["f1", "step_ms_median"])
        printf "%-8s %6s %8s %10s %9s %8s %9s %8s\n", "config", "files", "open_s", "step_ms", "first_ms", "ratio", "events", "spanned"
        split("f1 f10 f100 f100h10", order, " ")
        for (k = 1; k <= 4; k++) { t = order[k]; m = med(v[t, "step_ms_median"])
            printf "%-8s %6s %8s %10s %9s %8.2f %9s %8s\n", t, med(v[t, "files"]), med(v[t, "open_s"]),
                m, med(v[t, "step_ms_first"]), m / base, med(v[t, "events_per_lookup"]), med(v[t, "files_spanned"]) } }' "$T/all"
