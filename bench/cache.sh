#!/bin/sh
# cache: embedding.cache's hit rate, PCIe bytes per step and step time
# against the cache's size (1%, 10%, 50%, 100% of a shard's rows), with
# parallel.overlap = none and prefetch, on the fake device (device.type =
# fake: the GPU's data flow on the CPU, its host <-> device bytes
# counted), against host placement measured in the same invocation.
#
#   bench/cache.sh [ratings.csv]
#
# Two datasets: Zipf-distributed item ids (`data gen --zipf 1`, ITEMS
# items, default 50000, 1024 users) and ml-latest-small's ratings (default
# ../shared/data/ml-latest-small/ratings.csv next to the repo; skipped
# with a message when absent). STEPS (default 300) steps of input/tiny.in's
# HSTU with train.batch_size = BATCH (default 8) and one in-batch negative
# per position (train.negatives_from = in_batch: a step's rows are its
# batch's items; uniform negatives would draw rows over the whole table,
# which no cache holds, and make 1% and 10% too small for two steps' rows)
# on NP (default 2) ranks. Per row: the hit rate (rows resident when a
# step's ids were resolved), the rows fetched at the lookup and ahead
# (prefetch fills) per step, the cache's PCIe bytes per step (fetched +
# written back, all ranks), the fake device's h2d + d2h bytes per step
# (rank max: everything, the exchanges' staging too) and the median step
# time (interval_s, the first step left out); the caches smaller than the
# shard once per eviction policy (embedding.cache_policy = lru, lfu: at
# 100% nothing is evicted). FILLS_ONLY=1: only the last table (where the
# fills wait, below). A cache too small for two
# steps' rows is refused by the trainer: "too small". TABLES (default
# "plain dynamic") picks the item tables: plain, and a dynamic table
# (embedding.dynamic = on: the cache over its row pool, keyed by pool
# slot; LRU only, against the host-placed dynamic table; the shard's rows
# are the dataset's items' share, no capacity). Prints a markdown table;
# never asserts on time.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
DATA=${1:-$here/../shared/data/ml-latest-small/ratings.csv}
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "cache.sh: set FREESCALE to the program" >&2; exit 2; }
STEPS=${STEPS:-300}
BATCH=${BATCH:-8}
NP=${NP:-2}
ITEMS=${ITEMS:-50000}
TABLES=${TABLES:-plain dynamic}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-cache.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
"$FS" data gen --users 1024 --items "$ITEMS" --zipf 1 --length uniform:10,60 --timestamps \
    -o "$W/zipf.h5" >/dev/null || { echo "cache.sh: data gen failed" >&2; exit 1; }
sets="zipf"
if [ -r "$DATA" ]; then
    "$FS" data import --format csv "$DATA" -o "$W/mls.h5" >/dev/null && sets="zipf mls"
else
    echo "cache.sh: ml-latest-small skipped: $DATA is absent (MovieLens latest-small's ratings.csv)"
fi
[ "${FILLS_ONLY:-0}" = 1 ] && sets= # only the fills' block (at the end)

# mean of field F over the train lines after the first; med: median of interval_s
mean() { grep '"event":"train"' "$1" | tail -n +2 | grep -o "\"$2\":[^,}]*" | cut -d: -f2 |
    awk '{ s += $1; n++ } END { printf "%.0f", n ? s / n : 0 }'; }
rate() { grep '"event":"train"' "$1" | tail -n +2 | grep -o '"items.cache_hit_rate":[^,}]*' |
    cut -d: -f2 | awk '{ s += $1; n++ } END { printf "%.1f%%", n ? 100 * s / n : 0 }'; }
med() { grep '"event":"train"' "$1" | tail -n +2 | grep -o '"interval_s":[^,}]*' | cut -d: -f2 |
    sort -g | awk '{ v[NR] = $1 } END { printf "%.1f", NR ? 1000 * v[int((NR + 1) / 2)] : 0 }'; }

printf '# %s, %s ranks, %s steps of %s sequences, fake device; load: %s\n' "$(date -u +%F)" \
    "$NP" "$STEPS" "$BATCH" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| data | table | policy | overlap | hit rate | misses/step | fills/step | cache bytes/step | h2d+d2h bytes/step | step ms |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for set in $sets; do
    for tab in $TABLES; do
        D= cases="host 0.01:lru 0.01:lfu 0.1:lru 0.1:lfu 0.5:lru 0.5:lfu 1.0:lru" tn=
        if [ "$tab" = dynamic ]; then
            D=embedding.dynamic=on cases="host 0.01:lru 0.1:lru 0.5:lru 1.0:lru" tn="dynamic "
        fi
        for ov in none prefetch; do
            for case in $cases; do
                size=${case%:*} pol=${case#*:}
                A="embedding.placement=host $D"
                [ $size = host ] || A="$A embedding.cache=$size embedding.cache_policy=$pol"
                m="$W/$set-$tab-$ov-$size-$pol.jsonl"
                if ! timeout 600 mpirun -np "$NP" "$FS" train "$here/input/tiny.in" \
                    data.path="$W/$set.h5" train.max_steps="$STEPS" train.epochs=100 \
                    train.log_every=1 train.final_eval=off train.batch_size="$BATCH" \
                    train.negatives=1 train.negatives_from=in_batch device.type=fake device.share=on parallel.transport=mpi \
                    parallel.overlap=$ov $A output.metrics="$m" >"$W/out" 2>&1; then
                    grep -q 'more rows resident at once' "$W/out" &&
                        printf '| %s | %scache %s | %s | %s | too small | | | | | |\n' "$set" "$tn" "$size" "$pol" "$ov" ||
                        printf '| %s | %s%s | %s | %s | failed: %s | | | | | |\n' "$set" "$tn" "$size" "$pol" "$ov" \
                            "$(grep -m1 error "$W/out")"
                    continue
                fi
                io=$(( $(mean "$m" h2d_bytes) + $(mean "$m" d2h_bytes) ))
                if [ $size = host ]; then
                    printf '| %s | %shost | | %s | | | | | %s | %s |\n' "$set" "$tn" "$ov" "$io" "$(med "$m")"
                else
                    cb=$(( $(mean "$m" items.cache_fetched_bytes) + $(mean "$m" items.cache_written_bytes) ))
                    printf '| %s | %scache %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$set" "$tn" "$size" \
                        "$pol" "$ov" "$(rate "$m")" "$(mean "$m" items.cache_misses)" \
                        "$(mean "$m" items.cache_fills)" "$cb" "$io" "$(med "$m")"
                fi
            done
        done
    done
done

# Where the fills wait (issue 54's "hidden behind the previous step"): on
# the fake device's asynchronous streams (FREESCALE_FAKE_ASYNC=ASYNC,
# default 64: the compute stream and the copy stream in threads of their
# own), the copy stream emulating a link of COPY_GBS GB/s (default 0.05:
# slow enough that a fill's copies take milliseconds beside the CPU's step,
# as PCIe's do beside a GPU's), cache 0.1 (lru) on the Zipf ids,
# parallel.overlap = none and prefetch interleaved over ROUNDS rounds
# (default 3) of FSTEPS steps (default 100). Per overlap: the rows
# fetched at the lookup per step (items.cache_misses: 0 with prefetch, the
# lookups after the first), the rows filled ahead (cache_fills), the
# host's and the compute stream's waits for the fills a step
# (items.cache_fill_wait_ms, cache_fill_stall_ms: their mean over the
# steps after the first, the median over the rounds) and the median step
# time (median over the rounds).
ASYNC=${ASYNC:-64}
COPY_GBS=${COPY_GBS:-0.05}
ROUNDS=${ROUNDS:-3}
FSTEPS=${FSTEPS:-100}
meanf() { grep '"event":"train"' "$1" | tail -n +2 | grep -o "\"$2\":[^,}]*" | cut -d: -f2 |
    awk '{ s += $1; n++ } END { printf "%.3f", n ? s / n : 0 }'; }
medr() { sort -g | awk '{ v[NR] = $1 } END { printf "%s", NR ? v[int((NR + 1) / 2)] : "" }'; }
printf '\n# the fills on the step'"'"'s path: FREESCALE_FAKE_ASYNC=%s FREESCALE_FAKE_COPY_GBS=%s, cache 0.1, zipf, %s rounds of %s steps; load: %s\n' \
    "$ASYNC" "$COPY_GBS" "$ROUNDS" "$FSTEPS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| overlap | misses/step at the lookup | fills/step | host wait for fills ms/step | compute stream wait ms/step | step ms |\n'
printf '|---|---|---|---|---|---|\n'
for r in $(seq "$ROUNDS"); do
    for ov in none prefetch; do
        m="$W/fill-$ov-$r.jsonl"
        FREESCALE_FAKE_ASYNC=$ASYNC FREESCALE_FAKE_COPY_GBS=$COPY_GBS timeout 600 mpirun -np "$NP" \
            "$FS" train "$here/input/tiny.in" data.path="$W/zipf.h5" train.max_steps="$FSTEPS" \
            train.epochs=100 train.log_every=1 train.final_eval=off train.batch_size="$BATCH" \
            train.negatives=1 train.negatives_from=in_batch device.type=fake device.share=on \
            parallel.transport=mpi parallel.overlap=$ov embedding.placement=host \
            embedding.cache=0.1 output.metrics="$m" >"$W/out" 2>&1 ||
            printf '| %s | failed: %s | | | | |\n' "$ov" "$(grep -m1 error "$W/out")"
    done
done
for ov in none prefetch; do
    set -- "$W"/fill-$ov-*.jsonl
    [ -s "$1" ] || continue
    printf '| %s | %s | %s | %s | %s | %s |\n' "$ov" "$(meanf "$1" items.cache_misses)" \
        "$(meanf "$1" items.cache_fills)" \
        "$(for f; do meanf "$f" items.cache_fill_wait_ms; echo; done | medr)" \
        "$(for f; do meanf "$f" items.cache_fill_stall_ms; echo; done | medr)" \
        "$(for f; do med "$f"; echo; done | medr)"
done
