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
# asynchronous copies, run by the copy stream's thread: a missing ordering
# changes the losses or ends the run naming it); without prefetch the
# lookups miss, and the fills' waits are in the metrics; a checkpoint
# written with the cache resumes at another P as
# the host-placed one does, and the final checkpoints are the same bit for
# bit (h5diff); evaluation and recommend read through the cache (the host
# run's metrics and lists); a stream gives the host's losses with the hit
# rate on every window line; adam's step counts travel with the rows (P = 4);
# embedding.placement = auto chooses device, cached or host from the fake
# device's memory (FREESCALE_FAKE_MEM); the sharded feature tables are
# cached beside the item table (P = 1, 2, prefetch on and off: the host's
# losses and evaluation, their rows evicted and written back). A dynamic
# table (embedding.dynamic, src/embedding/emb_cache_dyn.c) whose lru
# evictions and insertions reuse pool slots, with a cache smaller than its
# pool (rows evicted by the table and by the cache), gives the host-placed
# dynamic table's losses bit for bit at P = 4 (chosen by placement = auto,
# prefetch, asynchronous stream; the final evaluation too) and P = 1 (ttl,
# adam, prefetch), and in a stream over window files at P = 2 (the
# windows' evaluations and counters too); a checkpoint written at
# P = 2 resumes at P = 1 as the host table's does (losses, final
# evaluation, the final checkpoints by h5diff). The refusals name the
# parameter.
. "$(dirname "$0")/lib.sh"
need_mpirun
"$FS" data gen --users 64 --items 3000 --length uniform:5,40 --timestamps -o "$T/c.h5" \
    >/dev/null || { fail "data gen"; finish; }
IN="$TOP_SRCDIR/input/tiny.in"
COMMON="data.path=$T/c.h5 train.epochs=10 train.max_steps=8 train.log_every=1 train.final_eval=off
train.negatives=2 train.batch_size=8 device.type=fake device.share=on parallel.transport=mpi"
HOST="embedding.placement=host"
CACHE="embedding.placement=host embedding.cache=0.3"

tr1() { timeout 300 "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON "$@"; }
expect_error "embedding.cache = 'ten': expected a row count" tr1 embedding.cache=ten
expect_error "command line: embedding.cache = '1.5': expected" tr1 $HOST embedding.cache=1.5
expect_error "embedding.cache = 0.3: the cache is over a host-placed table; set embedding.placement = host (or auto" \
    tr1 embedding.placement=device embedding.cache=0.3
expect_error "embedding.cache = 0.3 with embedding.subspace_k" tr1 $CACHE embedding.subspace_k=4
"$FS" data gen --users 16 --items 200 --length uniform:5,10 --raw-ids 7 -o "$T/r.h5" >/dev/null ||
    fail "data gen (raw ids)"
expect_error "embedding.cache = 0.3: a fraction of a dynamic table's shard with no bound" \
    tr1 $CACHE data.path="$T/r.h5" embedding.dynamic=on
expect_error "embedding.cache: the cpu backend has no device memory" tr1 $CACHE device.type=cpu
expect_error "more rows resident at once" tr1 $HOST embedding.cache=10

# crun NAME NP OV ARGS...: a cached run with parallel.overlap = OV; at P = 2
# with prefetch on the fake device's asynchronous stream
crun() { cn=$1 cp=$2 co=$3; shift 3
    if [ $cp = 2 ] && [ $co = prefetch ]; then
        FREESCALE_FAKE_ASYNC=1000 run $cn $cp $CACHE "$@" parallel.overlap=$co
    else
        run $cn $cp $CACHE "$@" parallel.overlap=$co
    fi
}
# field F of train lines: one value per step (log_every = 1)
field() { grep '"event":"train"' "$1" | grep -o "\"$2\":[^,}]*" | cut -d: -f2; }
for np in 1 2 4; do
    OPT= # at 4 ranks adam: its step counts travel with the rows
    [ $np = 4 ] && OPT=embedding.optimizer=adam
    run host-$np $np $HOST $OPT
    [ $np = 2 ] && run dev-$np $np embedding.placement=device
    for ov in none prefetch; do
        crun c-$np-$ov $np $ov $OPT
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
# without prefetch the lookups miss (their rows fetched at the lookup, none
# ahead); every train line has the fills' waits (items.cache_fill_wait_ms,
# cache_fill_stall_ms), on the asynchronous streams too (c-2-prefetch)
mn=$(field "$T/c-2-none.jsonl" items.cache_misses | tail -n +2 | awk '{ s += $1 } END { print s + 0 }')
fn=$(field "$T/c-2-none.jsonl" items.cache_fills | awk '{ s += $1 } END { print s + 0 }')
awk -v m="$mn" -v f="$fn" 'BEGIN { exit !(m > 0 && f == 0) }' &&
    pass "P=2 no prefetch: $mn rows fetched at the lookups after the first, none ahead" ||
    fail "P=2 no prefetch: misses $mn at the lookups, fills $fn"
for r in c-2-none c-2-prefetch; do
    nw=$(field "$T/$r.jsonl" items.cache_fill_wait_ms | grep -c '^[0-9.e+-]*$')
    ns=$(field "$T/$r.jsonl" items.cache_fill_stall_ms | grep -c '^[0-9.e+-]*$')
    [ "$nw" = 8 ] && [ "$ns" = 8 ] && pass "$r: the fills' waits on every train line" ||
        fail "$r: the fills' waits on $nw and $ns of 8 train lines"
done
grep -q 'cache hit [0-9.]*% misses' "$T/c-2-none.out" && pass "the progress line shows the hit rate" ||
    fail "no hit rate on the progress line: $(grep 'step 1/' "$T/c-2-none.out" | head -n 1)"
# feature tables (features.*: emb_multi.c's lookup) beside the cached item
# table: the sharded ones cached too, their ids resolved at the lookup (no
# prefetch of feature rows); at P = 1 and 2, overlap none and prefetch
# (P = 2: the asynchronous stream), the losses and the final evaluation
# (read through the caches) are host placement's bit for bit, feat.cat's
# rows evicted and written back, its metrics under its own name
"$FS" data gen --users 64 --items 3000 --length uniform:5,40 --timestamps \
    --item-feature cat:4000 --user-feature age:300 -o "$T/f.h5" >/dev/null || fail "data gen (features)"
FT="data.path=$T/f.h5 features.item=cat features.user=age features.placement=sharded train.final_eval=on"
expect_error "embedding.cache = 0.3 with features.dynamic" tr1 $CACHE $FT features.dynamic=cat
for np in 1 2; do
    run fh-$np $np $HOST $FT
    for ov in none prefetch; do
        crun fc-$np-$ov $np $ov $FT
        same_losses "$T/fh-$np.jsonl" "$T/fc-$np-$ov.jsonl" "features P=$np overlap=$ov: cache vs host" 0 0
        same_evals "$T/fh-$np.jsonl" "$T/fc-$np-$ov.jsonl" "features P=$np overlap=$ov: evaluation through the caches" 0
    done
    ev=$(field "$T/fc-$np-none.jsonl" feat.cat.cache_written_back | awk '{ s += $1 } END { print s + 0 }')
    awk -v e="$ev" 'BEGIN { exit !(e > 0) }' && pass "features P=$np: feat.cat's rows evicted and written back ($ev)" ||
        fail "features P=$np: no feat.cat row written back (its cache did not evict)"
done
grep -q 'feat.cat cache hit [0-9.]*% misses' "$T/fc-2-none.out" && pass "the progress line shows feat.cat's hit rate" ||
    fail "no feat.cat hit rate on the progress line"
# a dynamic table over the cache: lru in a pool of 250 rows per shard (P =
# 4), 150 cached (0.6: 500 at P = 1); 12 steps of batch 4 (P = 1: ttl,
# adam); at P = 4 embedding.placement = auto chooses the cache (1 MiB of
# fake device memory: the pools and the workspace do not fit, the cache
# does), prefetch on the asynchronous stream, and the final evaluation
# reads through the cache
DYN="embedding.dynamic=on train.batch_size=4 train.max_steps=12"
LRU="embedding.evict=lru embedding.capacity=1000"
run dh-4 4 $DYN $HOST $LRU train.final_eval=on
FREESCALE_FAKE_MEM=1M FREESCALE_FAKE_ASYNC=1000 run dc-4 4 $DYN $LRU embedding.cache=0.6 \
    parallel.overlap=prefetch train.final_eval=on
grep -q "^embedding.placement = auto: cached" "$T/dc-4.out" && pass "dynamic, auto, 1M: cached" ||
    fail "dynamic, auto, 1M: not cached: $(grep 'placement = auto' "$T/dc-4.out" | tail -n 1)"
same_losses "$T/dh-4.jsonl" "$T/dc-4.jsonl" "dynamic, P=4 prefetch: cache vs host" 0 0
same_evals "$T/dh-4.jsonl" "$T/dc-4.jsonl" "dynamic, P=4: the final evaluation through the cache" 0
ev=$(field "$T/dc-4.jsonl" items.evicted | awk '{ s += $1 } END { print s + 0 }')
cev=$(field "$T/dc-4.jsonl" items.cache_evicted | awk '{ s += $1 } END { print s + 0 }')
awk -v e="$ev" -v c="$cev" 'BEGIN { exit !(e > 0 && c > 0) }' &&
    pass "dynamic: rows evicted by the table ($ev) and by the cache ($cev)" ||
    fail "dynamic: evicted by the table $ev, by the cache $cev"
TTL="embedding.evict=ttl:2 embedding.optimizer=adam"
run dh-1 1 $DYN $HOST $TTL
run dc-1 1 $DYN $HOST $TTL embedding.cache=500 parallel.overlap=prefetch
same_losses "$T/dh-1.jsonl" "$T/dc-1.jsonl" "dynamic, P=1 ttl adam prefetch: cache vs host" 0 0
for k in host cache; do # 6 steps on 2 ranks, 6 more on 1
    A=$HOST; [ $k = cache ] && A="$HOST embedding.cache=0.5"
    run dres-$k 2 $DYN $LRU $A train.max_steps=6 output.checkpoint_dir="$T/dck-$k"
    run dres-$k 1 $DYN $LRU $A train.resume=auto output.checkpoint_dir="$T/dck-$k" train.final_eval=on
done
same_losses "$T/dres-host.jsonl" "$T/dres-cache.jsonl" "dynamic, resume 2 -> 1 rank: cache vs host" 0 0
same_evals "$T/dres-host.jsonl" "$T/dres-cache.jsonl" "dynamic: evaluation through the cache" 0
same_state "$T/dck-host/ckpt-12.h5" "$T/dck-cache/ckpt-12.h5" "dynamic: final checkpoint: cache vs host"
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
# a dynamic table's stream over window files (12h windows of day files, new
# items every day; P = 2, a cache of 60 of ~215 rows per shard, prefetch on
# the asynchronous stream): the host's losses and windows (their
# evaluations and the table's counters), the cache evicting
"$FS" data gen --stream --days 3 --users 60 --items 400 --new-items-per-day 10 --labels --seed 3 \
    -o "$T/one.h5" --split-days "$T/D" >/dev/null 2>&1 || fail "data gen --stream"
DS="train.schedule=stream data.window=12h data.path=$T/D/day-*.h5 train.batch_size=3
train.negatives=1 train.log_every=5 train.max_steps=0 embedding.dynamic=on"
run sd-host 2 $HOST $DS
FREESCALE_FAKE_ASYNC=1000 run sd-cache 2 $HOST $DS embedding.cache=60 parallel.overlap=prefetch
same_losses "$T/sd-host.jsonl" "$T/sd-cache.jsonl" "a dynamic stream: cache vs host" 0 0
win() { grep '"event":"window"' "$1" | sed 's/"[a-z_]*_s":[^,}]*,*//g; s/"peak_mib[a-z_]*":[^,}]*,*//g;
    s/"seconds":[^,}]*,*//g; s/"[hd]2[hd]_bytes":[^,}]*,*//g; s/"items.cache_[a-z_]*":[^,}]*,*//g'; }
win "$T/sd-host.jsonl" > "$T/wa"; win "$T/sd-cache.jsonl" > "$T/wb"
cev=$(grep '"event":"window"' "$T/sd-cache.jsonl" | grep -o '"items.cache_evicted":[^,}]*' |
    cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
[ "$(wc -l < "$T/wa")" -gt 1 ] && cmp -s "$T/wa" "$T/wb" && awk -v c="$cev" 'BEGIN { exit !(c > 0) }' &&
    pass "a dynamic stream: $(wc -l < "$T/wa") windows identical, cache vs host (evicted $cev)" ||
    fail "a dynamic stream: windows differ or nothing evicted ($cev): $(diff "$T/wa" "$T/wb" | head -n 2 | cut -c 1-300 | tr '\n' ' ')"
finish
