#!/bin/sh
# fake_cache: embedding.cache (src/embedding/emb_cache.c), a device cache
# of hot rows over the host-placed item table, on the fake device: 8
# steps of a 3000-item table whose steps touch more rows than the cache
# holds (rows evicted and written back, checked in the metrics), at 1, 2
# and 4 ranks, parallel.overlap = none and prefetch, give the losses of
# embedding.placement = host and = device bit for bit (at P = 1 and 2 with
# LFU eviction too, on the asynchronous stream); with prefetch the
# lookups after the first have no miss (their rows were filled during the
# step before), and at P = 2 that run is on the fake device's asynchronous
# stream (FREESCALE_FAKE_ASYNC=1000: the fills and write-backs are
# asynchronous copies, a missing ordering changes the losses); a checkpoint written with the cache resumes at another P as
# the host-placed one does, and the final checkpoints are the same bit for
# bit (h5diff); evaluation and recommend read through the cache (the host
# run's metrics and lists); a stream gives the host's losses with the hit
# rate on every window line; adam's step counts travel with the rows (P = 4);
# embedding.placement = auto chooses device, cached or host from the fake
# device's memory (FREESCALE_FAKE_MEM). The refusals name the parameter.
. "$(dirname "$0")/lib.sh"
need_mpirun
"$FS" data gen --users 64 --items 3000 --length uniform:5,40 --timestamps -o "$T/c.h5" \
    >/dev/null || { fail "data gen"; finish; }
IN="$TOP_SRCDIR/input/tiny.in"
COMMON="data.path=$T/c.h5 train.epochs=10 train.max_steps=8 train.log_every=1 train.final_eval=off
train.negatives=2 train.batch_size=8 device.type=fake device.share=on parallel.transport=mpi"
HOST="embedding.placement=host"
CACHE="embedding.placement=host embedding.cache=0.3"

tr1() { timeout 120 "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON "$@"; }
expect_error "embedding.cache = 'ten': expected a row count" tr1 embedding.cache=ten
expect_error "command line: embedding.cache = '1.5': expected" tr1 $HOST embedding.cache=1.5
expect_error "embedding.cache = 0.3: the cache is over a host-placed table; set embedding.placement = host (or auto" \
    tr1 embedding.placement=device embedding.cache=0.3
expect_error "embedding.cache = 0.3 with embedding.dynamic = on" tr1 $CACHE embedding.dynamic=on
expect_error "embedding.cache: the cpu backend has no device memory" tr1 $CACHE device.type=cpu
expect_error "more rows resident at once" tr1 $HOST embedding.cache=10

# field F of train lines: one value per step (log_every = 1)
field() { grep '"event":"train"' "$1" | grep -o "\"$2\":[^,}]*" | cut -d: -f2; }
for np in 1 2 4; do
    OPT= # at 4 ranks adam: its step counts travel with the rows
    [ $np = 4 ] && OPT=embedding.optimizer=adam
    run host-$np $np $HOST $OPT
    [ $np = 2 ] && run dev-$np $np embedding.placement=device
    for ov in none prefetch; do
        if [ $np = 2 ] && [ $ov = prefetch ]; then
            FREESCALE_FAKE_ASYNC=1000 run c-$np-$ov $np $CACHE $OPT parallel.overlap=$ov
        else
            run c-$np-$ov $np $CACHE $OPT parallel.overlap=$ov
        fi
        same_losses "$T/host-$np.jsonl" "$T/c-$np-$ov.jsonl" "P=$np overlap=$ov: cache vs host" 0 0
        [ $np = 4 ] && continue # LFU eviction (embedding.cache_policy) at P = 1 and 2
        FREESCALE_FAKE_ASYNC=1000 run l-$np-$ov $np $CACHE embedding.cache_policy=lfu parallel.overlap=$ov
        same_losses "$T/host-$np.jsonl" "$T/l-$np-$ov.jsonl" "P=$np overlap=$ov: LFU cache vs host" 0 0
        [ "$(field "$T/l-$np-$ov.jsonl" items.cache_hits)" != "$(field "$T/c-$np-$ov.jsonl" items.cache_hits)" ] &&
            grep -q "LFU eviction" "$T/l-$np-$ov.out" && pass "P=$np overlap=$ov: LFU's hits are not LRU's" ||
            fail "P=$np overlap=$ov: LFU hits as LRU does"
    done
    [ $np = 2 ] && same_losses "$T/dev-2.jsonl" "$T/c-2-none.jsonl" "P=2: cache vs device" 0 0
    ev=$(field "$T/c-$np-none.jsonl" items.cache_written_back | awk '{ s += $1 } END { print s + 0 }')
    awk -v e="$ev" 'BEGIN { exit !(e > 0) }' && pass "P=$np: rows evicted and written back ($ev)" ||
        fail "P=$np: no row written back: the cache did not evict"
    m=$(field "$T/c-$np-prefetch.jsonl" items.cache_misses | tail -n +2 | awk '{ s += $1 } END { print s + 0 }')
    f=$(field "$T/c-$np-prefetch.jsonl" items.cache_fills | awk '{ s += $1 } END { print s + 0 }')
    [ "$m" = 0 ] && awk -v f="$f" 'BEGIN { exit !(f > 0) }' &&
        pass "P=$np prefetch: no miss at the lookups after the first ($f rows filled ahead)" ||
        fail "P=$np prefetch: misses $m at the lookups, fills $f"
done
grep -q 'cache hit [0-9.]*% misses' "$T/c-2-none.out" && pass "the progress line shows the hit rate" ||
    fail "no hit rate on the progress line: $(grep 'step 1/' "$T/c-2-none.out" | head -n 1)"
# embedding.placement = auto with a cache: device when the whole shard fits
# (64 MiB), the cache when only it does (a 50000-row table, 3 MiB), host
# when neither (1 MiB); the cached run's losses are the host's
"$FS" data gen --users 64 --items 50000 --length uniform:5,40 --timestamps -o "$T/w.h5" \
    >/dev/null || fail "data gen (wide)"
for mem in 64M:device 3M:cached 1M:host; do
    FREESCALE_FAKE_MEM=${mem%:*} run auto-${mem#*:} 2 data.path="$T/w.h5" embedding.cache=0.1
    grep -q "^embedding.placement = auto: ${mem#*:} \|^embedding.placement = auto: the whole shard fits" \
        "$T/auto-${mem#*:}.out" && pass "auto, ${mem%:*}: ${mem#*:}" ||
        fail "auto, ${mem%:*}: not ${mem#*:}: $(grep 'placement = auto' "$T/auto-${mem#*:}.out" | tail -n 1)"
done
grep -q "embedding.cache = 0.1 is not used" "$T/auto-device.out" &&
    grep -q "^embedding.placement = auto: cached" "$T/auto-cached.out" &&
    grep -q "^embedding.placement = auto: host (embedding.cache" "$T/auto-host.out" &&
    pass "auto: device, cached and host said" || fail "auto: the lines do not say device, cached, host"
same_losses "$T/auto-host.jsonl" "$T/auto-cached.jsonl" "auto: cached vs host" 0 0
# resume at another P: 4 steps on 2 ranks, 4 more on 4, cached and host-placed
for k in host cache; do
    A=$HOST; [ $k = cache ] && A=$CACHE
    run res-$k 2 $A train.max_steps=4 output.checkpoint_dir="$T/ck-$k" parallel.overlap=prefetch
    run res-$k 4 $A train.resume=auto output.checkpoint_dir="$T/ck-$k" train.final_eval=on
done
same_losses "$T/res-host.jsonl" "$T/res-cache.jsonl" "resume 2 -> 4 ranks: cache vs host" 0 0
same_state "$T/ck-host/ckpt-8.h5" "$T/ck-cache/ckpt-8.h5" "final checkpoint: cache vs host"
# evaluation and recommend read through the cache
same_evals "$T/res-host.jsonl" "$T/res-cache.jsonl" "evaluation through the cache" 0
"$MPIRUN" -np 2 "$FS" recommend "$T/ck-host/ckpt-8.h5" --top 5 -o "$T/rec-host.csv" >"$T/out" 2>&1 ||
    fail "recommend (host): $(tail -n 2 "$T/out")"
"$MPIRUN" -np 2 "$FS" recommend "$T/ck-host/ckpt-8.h5" device.type=fake $CACHE --top 5 \
    -o "$T/rec-cache.csv" >"$T/out" 2>&1 || fail "recommend (cache): $(tail -n 2 "$T/out")"
[ -s "$T/rec-cache.csv" ] && cmp -s "$T/rec-host.csv" "$T/rec-cache.csv" &&
    pass "recommend through the cache: the host run's lists" || fail "recommend through the cache differs"
# a stream (4-week windows): the host's losses, the hit rate per window
S="train.schedule=stream data.window=4w train.max_steps=0"
run st-host 2 $HOST $S
run st-cache 2 $CACHE $S parallel.overlap=prefetch
same_losses "$T/st-host.jsonl" "$T/st-cache.jsonl" "a stream: cache vs host" 0 0
w=$(grep '"event":"window"' "$T/st-cache.jsonl" | grep -c '"items.cache_hit_rate":')
[ "$w" -gt 1 ] && [ "$w" = "$(grep -c '"event":"window"' "$T/st-cache.jsonl")" ] &&
    pass "a stream: the hit rate on each of its $w window lines" || fail "a stream: hit rates on $w window lines"
if command -v gnuplot >/dev/null 2>&1; then
    expect_ok "$TOP_SRCDIR/scripts/plot" -o "$T/png" "$T/st-cache.jsonl"
    [ -s "$T/png/st-cache-cache.png" ] && pass "scripts/plot draws the hit rate per window" ||
        fail "scripts/plot: no st-cache-cache.png"
fi
finish
