#!/bin/sh
# fake_dynamic_feat: dynamic feature tables in device memory
# (features.dynamic with embedding.placement = device; doc/embedding.md,
# "Dynamic tables on the device") on the fake device, whose operations are
# the CPU's: at P = 1, 2 and 4 ranks sharing it (device.share = on,
# transport mpi) the losses, the evaluations' metrics and the tables'
# counters equal the CPU's host tables at tolerance 0, for retrieval with
# item and user features (two dynamic tables, one multi-valued) under
# admission with ttl, lru under a binding capacity, admission with lfu and
# adam (the item table dynamic too in one run), embedding groups (admit 1,
# evict none), and ranking with features (admission, ttl); a checkpoint
# chain (full and deltas) written from device tables at P = 2 holds the
# host tables' datasets bit for bit and resumes at P = 4 with the losses
# of the host tables' checkpoint resumed there; recommend from it over
# device tables gives the CPU's lists. The device's host waits per step,
# host tables against device tables, are reported (doc/embedding.md).
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 60 --items 600 --length uniform:4,30 --timestamps --item-feature genres:12:3 \
    --item-feature brand:400 --user-feature age:7 --user-feature occ:15:2 --event-feature act:5 \
    -o "$T/all.h5" >/dev/null || { fail "data gen"; finish; }
DT="device.type=fake device.share=on embedding.placement=device parallel.transport=mpi"
run() { # NAME NP ARGS...: metrics in $T/NAME.jsonl
    rn=$1 rp=$2; shift 2
    timeout 300 "$MPIRUN" -np "$rp" "$FS" train "$IN" train.max_steps=6 train.log_every=1 \
        "output.metrics=$T/$rn.jsonl" "$@" >"$T/$rn.out" 2>&1 || fail "$rn: $(tail -3 "$T/$rn.out")"
}
# counters NAME A B: the dynamic tables' counters (rows, inserted, evicted,
# unadmitted hits, load) of every train line of A and B are identical
counters() {
    grep -o '"feat\.[a-z]*\.[a-z_]*":[^,}]*' "$2" > "$T/ca"
    grep -o '"feat\.[a-z]*\.[a-z_]*":[^,}]*' "$3" > "$T/cb"
    if [ -s "$T/ca" ] && cmp -s "$T/ca" "$T/cb"; then pass "$1: the same counters"
    else fail "$1: counters differ: $(diff "$T/ca" "$T/cb" | head -n 3 | tr '\n' ' ')"; fi
}
# duo NAME TAG NP ARGS...: the CPU's host tables and the device's tables
duo() {
    dn=$1 dt=$2 dp=$3; shift 3
    run "$dt-cpu" "$dp" device.type=cpu "$@"
    run "$dt-dev" "$dp" $DT "$@"
    same_losses "$T/$dt-cpu.jsonl" "$T/$dt-dev.jsonl" "$dn: device tables vs CPU" 0 0
    same_evals "$T/$dt-cpu.jsonl" "$T/$dt-dev.jsonl" "$dn: device tables vs CPU" 0
    counters "$dn" "$T/$dt-cpu.jsonl" "$T/$dt-dev.jsonl"
}

# --- retrieval with item and user features, brand and occ dynamic -----------
# (2 negatives, 8 sequences a step: a lookup holds a part of brand's 400 ids)
F="data.path=$T/all.h5 features.item=genres,brand features.user=age,occ features.event=act
features.placement=sharded features.dynamic=brand,occ train.negatives=2 train.batch_size=8"
for np in 1 2 4; do
    duo "P=$np admit=2 ttl:2" t$np $np $F embedding.admit=2 embedding.evict=ttl:2
    duo "P=$np lru, capacity 200" l$np $np $F embedding.evict=lru embedding.capacity=200
    duo "P=$np admit=3 lfu, capacity 200, adam" q$np $np $F embedding.admit=3 embedding.evict=lfu \
        embedding.capacity=200 embedding.optimizer=adam
done
for f in l2 t2 q2; do
    grep -q '"feat.brand.evicted":[1-9]' "$T/$f-dev.jsonl" ||
        fail "$f: no evictions: $(grep -o '"feat.brand.evicted":[^,]*' "$T/$f-dev.jsonl" | tr '\n' ' ')"
done
grep -q '"feat.brand.unadmitted_hits":[1-9]' "$T/q2-dev.jsonl" &&
    pass "the device's feature tables evict (lru, ttl, lfu) and give the unadmitted row" ||
    fail "no unadmitted hits: $(grep -o '"feat.brand.unadmitted_hits":[^,]*' "$T/q2-dev.jsonl" | tr '\n' ' ')"
duo "P=2 the item table dynamic too, admit=2 ttl:3" i2 2 $F embedding.dynamic=on embedding.admit=2 \
    embedding.evict=ttl:3
duo "P=4 admit=1, evict none, embedding groups of 2" g4 4 $F parallel.embedding_group=2

# --- ranking with features: genres (multi-valued) and age dynamic ------------
. "$TOP_SRCDIR/tests/rank_feat_data.sh"
rank_feat_data "$T" "$FS" || { fail "import"; finish; }
R="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
data.split=last:20% train.batch_size=12 features.item=genres features.user=age features.event=click
features.placement=sharded model.head=16 features.dynamic=genres,age embedding.admit=2
embedding.evict=ttl:3"
for np in 1 2 4; do
    duo "P=$np ranking, admit=2 ttl:3" r$np $np $R
done

# --- checkpoints: full at step 4, deltas at 5 and 6 (the probation lists, the
# evicted ids), from host and device tables; resumed at P = 4 ----------------
CK="$F embedding.admit=2 embedding.evict=ttl:2 parallel.overlap=none train.checkpoint_every=4
output.checkpoint_delta_every=1"
run ck-cpu 2 device.type=cpu $CK "output.checkpoint_dir=$T/ck-cpu"
run ck-dev 2 $DT $CK "output.checkpoint_dir=$T/ck-dev"
same_losses "$T/ck-cpu.jsonl" "$T/ck-dev.jsonl" "checkpointing run: device tables vs CPU" 0 0
nck=0
for f in "$T/ck-cpu"/*.h5; do
    b=$(basename "$f")
    [ -f "$T/ck-dev/$b" ] || { fail "checkpoint $b written from host tables only"; continue; }
    command -v h5diff >/dev/null 2>&1 || continue
    if h5diff -q "$f" "$T/ck-dev/$b" /emb /emb >/dev/null 2>&1; then nck=$((nck + 1))
    else fail "checkpoint $b: /emb differs: $(h5diff -r "$f" "$T/ck-dev/$b" /emb /emb 2>&1 | head -n 3 | tr '\n' ' ')"; fi
done
if ! command -v h5diff >/dev/null 2>&1; then pass "checkpoints not compared (h5diff, of hdf5-tools, is not installed)"
elif [ "$nck" -ge 3 ]; then pass "$nck checkpoints (full and delta): /emb bit for bit from device and host tables"
else fail "only $nck checkpoints compared: $(ls "$T/ck-cpu" | tr '\n' ' ')"; fi
RS="$F embedding.admit=2 embedding.evict=ttl:2 parallel.overlap=none train.max_steps=8"
run full 2 device.type=cpu $RS
run res-cpu 4 device.type=cpu $RS "train.resume=$T/ck-cpu/ckpt-4.h5"
run res-dev 4 $DT $RS "train.resume=$T/ck-dev/ckpt-4.h5"
same_losses "$T/res-cpu.jsonl" "$T/res-dev.jsonl" \
    "resumed at P=4 from P=2's device tables (device) = from its host tables (CPU)" 0 0
same_evals "$T/res-cpu.jsonl" "$T/res-dev.jsonl" "resumed at P=4, device tables vs CPU" 0
same_losses "$T/full.jsonl" "$T/res-dev.jsonl" "resumed at P=4: the uninterrupted run's" 4 1e-6
run res-delta 2 $DT $RS "train.resume=$T/ck-dev/delta-5.h5"
same_losses "$T/full.jsonl" "$T/res-delta.jsonl" "resumed at P=2 (device) from the delta chain" 5 0
# recommend over the checkpoint's tables (the items' representations with
# their dynamic feature rows) in device memory = on the CPU
"$MPIRUN" -np 2 "$FS" recommend "$T/ck-dev/ckpt-6.h5" --top 5 -o "$T/rec-cpu.csv" >/dev/null 2>&1 &&
    "$MPIRUN" -np 2 "$FS" recommend "$T/ck-dev/ckpt-6.h5" $DT --top 5 -o "$T/rec-dev.csv" \
        >"$T/rec-dev.out" 2>&1 || fail "recommend: $(tail -n 2 "$T/rec-dev.out")"
grep -q '^embedding.placement: device' "$T/rec-dev.out" && [ -s "$T/rec-cpu.csv" ] &&
    cmp -s "$T/rec-cpu.csv" "$T/rec-dev.csv" && pass "recommend over dynamic feature tables in device memory = CPU" ||
    fail "recommend over device tables: $(cmp "$T/rec-cpu.csv" "$T/rec-dev.csv" 2>&1)"

# --- host waits per step: the last logging interval's (steps 21-25), host
# and device tables (doc/embedding.md) -----------------------------------------
sy() { grep '"event":"train"' "$1" | tail -n 1 | grep -o '"device_syncs":[0-9.]*' | cut -d: -f2; }
W="device.type=fake device.share=on parallel.transport=mpi train.epochs=20 train.max_steps=25
train.log_every=5 train.eval_every=0 train.final_eval=off"
for pl in host device; do
    run w$pl 2 $W embedding.placement=$pl $F embedding.admit=2 embedding.evict=ttl:2
    run wr$pl 1 $W embedding.placement=$pl $R
done
echo "device_syncs a step, retrieval, P=2, admit=2 ttl:2: host tables $(sy "$T/whost.jsonl"), device tables $(sy "$T/wdevice.jsonl")"
echo "device_syncs a step, ranking, P=1, admit=2 ttl:3: host tables $(sy "$T/wrhost.jsonl"), device tables $(sy "$T/wrdevice.jsonl")"
finish
