#!/bin/sh
# fake_auto_placement: embedding.placement = auto chooses
# (src/train/placement.c). On the fake device (FREESCALE_FAKE_MEM sets its
# memory): device memory when the shard, its optimizer state and the step's
# workspace fit in half of the free memory per rank sharing the device
# (64 MiB), host memory when they do not (6 MiB: a table of 50000 rows),
# at 1 and 2 ranks (the IPC transport's line shows where the table is);
# host when device placement refuses the run (embedding.subspace_k) and for
# a dynamic table without a capacity; a dynamic table with a capacity goes
# where the line says. Every auto run's losses equal those of the placement
# it chose, asked for explicitly (tolerance 0; the final state bit for
# bit). On the CPU backend auto = host, said.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
"$FS" data gen --users 64 --items 50000 --length uniform:5,40 --timestamps \
    -o "$T/wide.h5" >/dev/null || { fail "data gen"; finish; }
COMMON="data.path=$T/wide.h5 train.epochs=10 train.max_steps=12 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
GPU="device.type=fake device.share=on"
# said PATTERN WHAT: the start-up line of the last run matches PATTERN
said() {
    grep -q "^embedding.placement = auto: $1" "$T/out" &&
        pass "$2: $(grep -o '^embedding.placement = auto: [a-z]* ([^:;,]*' "$T/out" | head -n 1)" ||
        fail "$2: $(grep 'placement' "$T/out" | head -n 1)"
}
# auto_run NAME NP MEM ARGS...: an auto run and the explicit run of the
# placement it chose (from its line), compared; sets CHOSEN
auto_run() {
    name=$1 np=$2; export FREESCALE_FAKE_MEM=$3; shift 3
    expect_ok train "$np" $GPU "$@" output.metrics="$T/$name-auto.jsonl" \
        output.checkpoint_dir="$T/ck-$name-auto"
    CHOSEN=$(sed -n 's/^embedding.placement = auto: \([a-z]*\) (.*/\1/p' "$T/out" | head -n 1)
    cp "$T/out" "$T/$name-auto.out"
    case "$CHOSEN" in
    host | device) ;;
    *) fail "$name: no choice said: $(grep 'placement' "$T/out" | head -n 1)"
       unset FREESCALE_FAKE_MEM; return ;;
    esac
    expect_ok train "$np" $GPU "$@" embedding.placement="$CHOSEN" \
        output.metrics="$T/$name-$CHOSEN.jsonl" output.checkpoint_dir="$T/ck-$name-$CHOSEN"
    same_losses "$T/$name-$CHOSEN.jsonl" "$T/$name-auto.jsonl" \
        "$name: auto ($CHOSEN) vs embedding.placement=$CHOSEN" 0 0
    same_state "$T/ck-$name-$CHOSEN/ckpt-12.h5" "$T/ck-$name-auto/ckpt-12.h5" \
        "$name: auto ($CHOSEN) vs embedding.placement=$CHOSEN"
    cp "$T/$name-auto.out" "$T/out"
    unset FREESCALE_FAKE_MEM
}

expect_ok train 1 device.type=cpu
said "host (the cpu backend has no device memory)" "cpu"

for np in 1 2; do
    TP=""; [ "$np" = 2 ] && TP="parallel.transport=copy-engine"
    auto_run fits$np $np 64M $TP
    said "device (the shards and their adagrad state" "P=$np, 64 MiB"
    [ "$np" = 2 ] && { grep -q "embedding rows and gradients of 1 device table through CUDA IPC" \
        "$T/out" && pass "P=2, 64 MiB: the table's rows go through IPC (device memory)" ||
        fail "P=2, 64 MiB: $(grep 'parallel.transport' "$T/out" | head -n 1)"; }
    auto_run short$np $np 6M $TP
    said "host (the shards and their adagrad state .* more than half of the" "P=$np, 6 MiB"
    [ "$np" = 2 ] && { grep -q "no table in device memory" "$T/out" &&
        pass "P=2, 6 MiB: the table's rows go by MPI (host memory)" ||
        fail "P=2, 6 MiB: $(grep 'parallel.transport' "$T/out" | head -n 1)"; }
done
auto_run subspace 1 64M embedding.subspace_k=4
said "host (device placement refuses this run: embedding.subspace_k = 4" "subspace_k"
auto_run unbounded 1 64M embedding.dynamic=on
said "host (" "a dynamic table without a capacity"
auto_run capacity 2 64M embedding.dynamic=on embedding.capacity=60000
finish
