#!/bin/sh
# fake_dynamic: dynamic tables in device memory (embedding.dynamic = on,
# embedding.placement = device; doc/embedding.md, "Dynamic tables on the
# device") on the fake device, whose operations are the CPU's: at P = 1,
# 2 and 4 ranks sharing it (device.share = on, transport mpi) the losses
# equal the CPU's host tables at tolerance 0 (adagrad and adam, a binding
# capacity, overlap prefetch, embedding groups; admission, ttl, lru and
# lfu with the tables' counters too), and equal
# host tables on the same device; the full and delta checkpoints written
# from device tables hold the same datasets, bit for bit, as those written
# from host tables; a device-table checkpoint written at P = 2 resumes at
# P = 4 (device) and at P = 1 (CPU) with the losses of the host-table
# checkpoint resumed on the CPU there, bit for bit (and the uninterrupted
# run's to 1e-6: other P, other orders of the sums);
# the final evaluation and recommend over a device table give the host
# table's figures,
# and a stream over window files (retrieval) the host tables' windows.
# The device's host waits per step are reported; a dynamic feature table
# beside the item table in device memory equals the CPU's too.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 64 --items 2000 --length pareto:8,1.2 --max-length 60 --timestamps \
    --item-feature brand:300 -o "$T/d.h5" >/dev/null 2>&1 || { fail "data gen"; finish; }
COMMON="data.path=$T/d.h5 data.max_seq_len=64 train.epochs=10 train.max_steps=6
train.log_every=1 train.eval_every=0 train.final_eval=off model.layers=1 model.dim=16
embedding.dynamic=on parallel.transport=mpi"
DEV="device.type=fake device.share=on embedding.placement=device"
# run, identical: tests/lib.sh
trio() { # NAME TAG NP ARGS...: the CPU, host tables and device tables on the fake device
    tn=$1 tt=$2 tp=$3; shift 3
    run "$tt-cpu" "$tp" device.type=cpu "$@"
    run "$tt-host" "$tp" device.type=fake device.share=on embedding.placement=host "$@"
    run "$tt-dev" "$tp" $DEV "$@"
    identical "$tn: device tables = CPU" "$T/$tt-cpu.jsonl" "$T/$tt-dev.jsonl"
    identical "$tn: device tables = host tables on the device" "$T/$tt-host.jsonl" "$T/$tt-dev.jsonl"
}
duo() { # NAME TAG NP ARGS...: the CPU and device tables on the fake device
    tn=$1 tt=$2 tp=$3; shift 3
    run "$tt-cpu" "$tp" device.type=cpu "$@"
    run "$tt-dev" "$tp" $DEV "$@"
    identical "$tn: device tables = CPU" "$T/$tt-cpu.jsonl" "$T/$tt-dev.jsonl"
}
for np in 1 2 4; do
    trio "P=$np" p$np $np
done
trio "P=2 prefetch adam" pa 2 parallel.overlap=prefetch embedding.optimizer=adam
trio "P=4 capacity 1200 (full shards: unadmitted rows)" cap 4 embedding.capacity=1200
grep -q '"items.unadmitted_hits":[1-9]' "$T/cap-dev.jsonl" &&
    pass "a full device table gives the unadmitted row" ||
    fail "no unadmitted hits: $(grep -o '"items.unadmitted_hits":[^,]*' "$T/cap-dev.jsonl" | tail -n 1)"
grep -o '"items.rows":[0-9]*' "$T/cap-cpu.jsonl" > "$T/ra"
grep -o '"items.rows":[0-9]*' "$T/cap-dev.jsonl" > "$T/rb"
cmp -s "$T/ra" "$T/rb" && pass "capacity: the same rows held on the device ($(tail -n 1 "$T/rb"))" ||
    fail "capacity: rows differ: $(paste "$T/ra" "$T/rb" | tail -n 2 | tr '\n' ' ')"
trio "P=4 embedding groups of 2" grp 4 parallel.embedding_group=2 parallel.overlap=prefetch
# admission, eviction (the counters too: rows, inserted, evicted, unadmitted, load)
counters() { # NAME A B: the tables' counters of A and B are identical and B evicted
    grep -o '"items\.[a-z_]*":[^,}]*' "$2" > "$T/ca"; grep -o '"items\.[a-z_]*":[^,}]*' "$3" > "$T/cb"
    if cmp -s "$T/ca" "$T/cb"; then pass "$1: the same counters"
    else fail "$1: counters differ: $(diff "$T/ca" "$T/cb" | head -n 3 | tr '\n' ' ')"; fi
}
B8="train.batch_size=8 train.max_steps=12"
for np in 1 2 4; do
    duo "P=$np admit=2" adm$np $np embedding.admit=2 $B8
    duo "P=$np ttl:2" ttl$np $np embedding.evict=ttl:2 $B8 embedding.optimizer=adam
    duo "P=$np lru, capacity 300" lru$np $np embedding.evict=lru embedding.capacity=300 $B8
    duo "P=$np admit=3 lfu, capacity 300" lfu$np $np embedding.admit=3 embedding.evict=lfu \
        embedding.capacity=300 $B8
    counters "P=$np lru" "$T/lru$np-cpu.jsonl" "$T/lru$np-dev.jsonl"
    counters "P=$np admit=3 lfu" "$T/lfu$np-cpu.jsonl" "$T/lfu$np-dev.jsonl"
done
grep -q '"items.evicted":[1-9]' "$T/lru2-dev.jsonl" && grep -q '"items.evicted":[1-9]' "$T/ttl2-dev.jsonl" &&
    pass "lru and ttl evict on the device" || fail "no evictions: $(grep -o '"items.evicted":[^,]*' "$T/lru2-dev.jsonl" | tail -n 2)"
duo "P=2 ttl:1 prefetch" ttlp 2 embedding.evict=ttl:1 parallel.overlap=prefetch $B8

# checkpoints (admission and ttl: the probation list, the evicted ids): a
# full one at step 4 and deltas at 5 and 6, from host and device tables:
# the same datasets
CK="train.checkpoint_every=4 output.checkpoint_delta_every=1 train.max_steps=6 embedding.admit=2
embedding.evict=ttl:2 parallel.overlap=none"
run ck-host 2 device.type=cpu $CK output.checkpoint_dir="$T/ck-host"
run ck-dev 2 $DEV $CK output.checkpoint_dir="$T/ck-dev"
identical "checkpointing run: device = CPU" "$T/ck-host.jsonl" "$T/ck-dev.jsonl"
nck=0
for f in "$T/ck-host"/*.h5; do
    b=$(basename "$f")
    [ -f "$T/ck-dev/$b" ] || { fail "checkpoint $b written from host tables only"; continue; }
    if command -v h5diff >/dev/null 2>&1; then
        if h5diff -q "$f" "$T/ck-dev/$b" /emb /emb >/dev/null 2>&1; then nck=$((nck + 1))
        else fail "checkpoint $b: /emb differs: $(h5diff -r "$f" "$T/ck-dev/$b" /emb /emb 2>&1 | head -n 3 | tr '\n' ' ')"; fi
    fi
done
command -v h5diff >/dev/null 2>&1 || pass "checkpoints not compared (h5diff, of hdf5-tools, is not installed)"
[ "$nck" -ge 3 ] && pass "$nck checkpoints (full and delta): /emb bit for bit from device and host tables" ||
    fail "only $nck checkpoints compared: $(ls "$T/ck-host" | tr '\n' ' ')"
# resume at another P from a device-table checkpoint
run full 2 device.type=cpu train.max_steps=8 embedding.admit=2 embedding.evict=ttl:2 parallel.overlap=none
for np in 4 1; do
    R="train.max_steps=8 embedding.admit=2 embedding.evict=ttl:2 parallel.overlap=none"
    run res$np-host $np device.type=cpu $R train.resume="$T/ck-host/ckpt-4.h5"
    [ $np = 4 ] && on="$DEV" || on=device.type=cpu
    run res$np $np $on $R train.resume="$T/ck-dev/ckpt-4.h5"
    identical "resumed at P=$np ($on) from P=2's device tables = from its host tables (CPU)" \
        "$T/res$np-host.jsonl" "$T/res$np.jsonl"
    same_losses "$T/full.jsonl" "$T/res$np.jsonl" "resumed at P=$np: the uninterrupted run's" 4 1e-6
done
run resd 2 $DEV $R train.resume=auto output.checkpoint_dir="$T/ck-dev" \
    output.checkpoint_delta_every=1 train.checkpoint_every=4
same_losses "$T/full.jsonl" "$T/resd.jsonl" "resumed at P=2 (device) from the delta chain" 6 0

# the final evaluation over a device table
run ev-host 2 device.type=cpu train.final_eval=on
run ev-dev 2 $DEV train.final_eval=on
a=$(grep '"event":"eval"' "$T/ev-host.jsonl" | sed 's/"time[^,]*,//g; s/"[a-z_]*_s":[^,}]*//g; s/"[hd]2[hd]_bytes":[^,}]*//g' | tail -n 1)
b=$(grep '"event":"eval"' "$T/ev-dev.jsonl" | sed 's/"time[^,]*,//g; s/"[a-z_]*_s":[^,}]*//g; s/"[hd]2[hd]_bytes":[^,}]*//g' | tail -n 1)
[ -n "$a" ] && [ "$a" = "$b" ] && pass "final evaluation over a device table = host table" ||
    fail "evaluation differs: $a | $b"

# recommend over the checkpoint's table in device memory = on the CPU
"$MPIRUN" -np 2 "$FS" recommend "$T/ck-dev/ckpt-4.h5" --top 5 -o "$T/rec-cpu.csv" >/dev/null 2>&1 &&
    "$MPIRUN" -np 2 "$FS" recommend "$T/ck-dev/ckpt-4.h5" $DEV parallel.transport=mpi --top 5 \
        -o "$T/rec-dev.csv" >"$T/rec-dev.out" 2>&1 || fail "recommend: $(tail -n 2 "$T/rec-dev.out")"
grep -q '^embedding.placement: device' "$T/rec-dev.out" && [ -s "$T/rec-cpu.csv" ] &&
    cmp -s "$T/rec-cpu.csv" "$T/rec-dev.csv" && pass "recommend over a device table = CPU" ||
    fail "recommend over a device table: $(cmp "$T/rec-cpu.csv" "$T/rec-dev.csv" 2>&1)"

# a stream over window files (12h windows of day files): the windows'
# losses and evaluations (over the device table's view) = host tables'
"$FS" data gen --stream --days 3 --users 60 --items 100 --new-items-per-day 10 --labels --seed 3 \
    -o "$T/one.h5" --split-days "$T/D" >/dev/null 2>&1 || fail "data gen --stream"
S="train.schedule=stream data.window=12h train.batch_size=8 train.log_every=5"
run st-host 1 device.type=fake embedding.placement=host "data.path=$T/D/day-*.h5" $S
run st-dev 1 $DEV "data.path=$T/D/day-*.h5" $S
win() { grep '"event":"window"' "$1" | sed 's/"[a-z_]*_s":[^,}]*,*//g; s/"peak_mib[a-z_]*":[^,}]*,*//g; s/"seconds":[^,}]*,*//g; s/"[hd]2[hd]_bytes":[^,}]*,*//g'; }
win "$T/st-host.jsonl" > "$T/wa"; win "$T/st-dev.jsonl" > "$T/wb"
[ -s "$T/wa" ] && cmp -s "$T/wa" "$T/wb" && pass "stream: $(wc -l < "$T/wa") windows identical, device = host tables" ||
    fail "stream windows differ: $(diff "$T/wa" "$T/wb" | head -n 2 | cut -c 1-300 | tr '\n' ' ')"

# host waits: the last logging interval's, host and device tables (doc/embedding.md)
sy() { grep '"event":"train"' "$1" | tail -n 1 | grep -o '"device_syncs":[0-9.]*' | cut -d: -f2; }
echo "device_syncs at step 6, P=2: host tables $(sy "$T/p2-host.jsonl"), device tables $(sy "$T/p2-dev.jsonl")"

# a dynamic feature table beside the dynamic item table, both in device
# memory (tests/fake_dynamic_feat.sh: more)
duo "P=2 a dynamic feature table, admit=2" feat 2 features.item=brand features.dynamic=brand \
    features.placement=sharded embedding.admit=2 $B8
finish
