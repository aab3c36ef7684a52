# device_placement_body.sh: the body of tests/cuda_placement.sh and
# tests/fake_placement.sh, sourced after lib.sh with DEV = cuda | fake.
#
# Item tables in device memory (embedding.placement=device) train as the
# host tables do: 20 steps of tiny.in, HSTU and SASRec, at 1, 2 and 4 ranks
# sharing one device (device.share=on), against the CPU backend and
# against host placement on the same device; every overlap mode (prefetch
# too: the next step's rows through the device-resident exchange); staged
# and direct (CUDA-aware MPI; FREESCALE_FAKE_AWARE=1 on the fake device,
# its compute stream behind the host: FREESCALE_FAKE_ASYNC);
# the copy-engine transport (the embedding rows and gradients too, within
# a node and, with debug.node_size, MPI between nodes); embedding groups smaller than the job (G < P:
# replicas summed); the wire codecs; a second identical run repeats the
# first; a checkpoint written by a CPU run resumes on the device with
# device placement and one written there resumes on the CPU, both
# continuing the uninterrupted run. The fake device runs the CPU's own
# operations: every comparison is exact (tolerance 0; the final state bit
# for bit); the evaluation and recommend score a device table where it
# is, with no copy of the shard through the host (the evaluation's
# h2d_bytes below one shard's bytes), with the CPU's metrics and lists.
# Without a device: placement=device is refused on the CPU
# backend with a clear message; CUDA then SKIPs (77).
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 train.epochs=10 train.max_steps=20 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
if [ "$DEV" = fake ]; then TOL=0 TOL_DEV=0; else TOL=1e-5 TOL_DEV=1e-6; fi
ck() { echo "output.checkpoint_dir=$T/ck-$1"; }
state_same() { [ "$DEV" = fake ] && same_state "$T/ck-$1/ckpt-20.h5" "$T/ck-$2/ckpt-20.h5" "$3"; }

expect_error "embedding.placement = device: the cpu backend has no device memory; use" \
    train 1 device.type=cpu embedding.placement=device
if ! train 1 device.type=$DEV train.max_steps=1 >"$T/probe" 2>&1; then
    [ "$failures" -eq 0 ] || finish
    [ "$DEV" = fake ] && { fail "the fake device does not train: $(tail -c 300 "$T/probe")"; finish; }
    echo "SKIP: no usable GPU: $(grep -o 'device.type=cuda: .*' "$T/probe" | head -n 1)"
    exit 77
fi
GPU="device.type=$DEV device.share=on"
for model in hstu sasrec; do
    M="model.type=$model"
    for np in 1 2 4; do
        expect_ok train $np $M device.type=cpu output.metrics="$T/$model-cpu-$np.jsonl" \
            $(ck $model-cpu-$np)
        expect_ok train $np $M $GPU embedding.placement=host parallel.transport=mpi \
            output.metrics="$T/$model-host-$np.jsonl"
        expect_ok train $np $M $GPU embedding.placement=device parallel.transport=mpi \
            output.metrics="$T/$model-dev-$np.jsonl" $(ck $model-dev-$np)
        grep -q '^embedding.placement: device' "$T/out" && pass "device placement reported" ||
            fail "device placement not reported: $(grep placement "$T/out" | head -n 1)"
        same_losses "$T/$model-cpu-$np.jsonl" "$T/$model-dev-$np.jsonl" \
            "$model P=$np: device tables vs CPU" 0 $TOL
        state_same $model-cpu-$np $model-dev-$np "$model P=$np: device tables vs CPU"
        same_losses "$T/$model-host-$np.jsonl" "$T/$model-dev-$np.jsonl" \
            "$model P=$np: device vs host tables on the device" 0 $TOL_DEV
    done
    expect_ok train 2 $M $GPU embedding.placement=device parallel.transport=mpi \
        output.metrics="$T/$model-dev-again.jsonl"
    same_losses "$T/$model-dev-2.jsonl" "$T/$model-dev-again.jsonl" "$model: a device run repeats" 0 $TOL_DEV
    for ov in none pipeline prefetch; do
        expect_ok train 2 $M $GPU embedding.placement=device parallel.overlap=$ov \
            parallel.transport=mpi output.metrics="$T/$model-dev-$ov.jsonl"
        same_losses "$T/$model-dev-2.jsonl" "$T/$model-dev-$ov.jsonl" "$model: overlap=$ov" 0 $TOL_DEV
    done
    expect_ok train 2 $M $GPU embedding.placement=device parallel.transport=copy-engine \
        output.metrics="$T/$model-dev-ce.jsonl"
    same_losses "$T/$model-dev-2.jsonl" "$T/$model-dev-ce.jsonl" "$model: copy-engine" 0 $TOL
done
# from here to the direct runs, the fake device's compute stream runs in a
# thread behind the host (FREESCALE_FAKE_ASYNC=1000: an operation runs only
# when the host waits for the stream), so that a peer's IPC write or an MPI
# receive into a buffer that an enqueued operation still uses, without an
# ordering in between, changes the losses
[ "$DEV" = fake ] && export FREESCALE_FAKE_ASYNC=1000
# the embedding rows and gradients through CUDA IPC too (emb_ipc.c): 4 ranks
# in nodes of 2 (IPC within, MPI across) with prefetch, against host tables
# under the same dense transport; the copy kernel at 2 ranks
expect_ok train 4 $GPU embedding.placement=host parallel.transport=copy-engine \
    debug.node_size=2 parallel.overlap=prefetch output.metrics="$T/ce4-host.jsonl"
expect_ok train 4 $GPU embedding.placement=device parallel.transport=copy-engine \
    debug.node_size=2 parallel.overlap=prefetch output.metrics="$T/ce4-dev.jsonl"
grep -q 'embedding rows and gradients of 1 device table through CUDA IPC to 1 peer' "$T/out" &&
    pass "embedding transfers through CUDA IPC reported" ||
    fail "embedding IPC not reported: $(grep 'transport' "$T/out" | head -n 2)"
if [ "$DEV" = fake ]; then
    grep -q "a compute stream up to 1000 operations behind the host" "$T/out" &&
        pass "the fake device's compute stream runs behind the host" ||
        fail "FREESCALE_FAKE_ASYNC not in effect: $(grep '^device' "$T/out")"
fi
same_losses "$T/ce4-host.jsonl" "$T/ce4-dev.jsonl" "rows through IPC in nodes of 2, prefetch" 0 $TOL_DEV
expect_ok train 2 $GPU embedding.placement=device parallel.transport=kernel \
    output.metrics="$T/k2-dev.jsonl"
same_losses "$T/hstu-dev-2.jsonl" "$T/k2-dev.jsonl" "rows through IPC by a copy kernel" 0 $TOL
# direct: device buffers handed to (CUDA-aware) MPI, every overlap mode
[ "$DEV" = fake ] && export FREESCALE_FAKE_AWARE=1
for ov in prioritized none prefetch; do
    direct_run "direct, overlap=$ov vs CPU" "$T/hstu-cpu-2.jsonl" "$T/direct-$ov.jsonl" $TOL \
        train 2 $GPU embedding.placement=device device.staging=direct parallel.transport=mpi \
        parallel.overlap=$ov output.metrics="$T/direct-$ov.jsonl"
done
unset FREESCALE_FAKE_AWARE FREESCALE_FAKE_ASYNC
# G < P: two embedding groups of 2 at 4 ranks (replicas summed), and the codecs
expect_ok train 4 device.type=cpu parallel.embedding_group=2 output.metrics="$T/g2-cpu.jsonl"
expect_ok train 4 $GPU embedding.placement=device parallel.embedding_group=2 \
    parallel.transport=mpi output.metrics="$T/g2-dev.jsonl"
same_losses "$T/g2-cpu.jsonl" "$T/g2-dev.jsonl" "G=2 < P=4: device tables vs CPU" 0 $TOL
expect_ok train 4 device.type=cpu parallel.embedding_group=2 parallel.overlap=none \
    output.metrics="$T/g2-cpu-none.jsonl"
expect_ok train 4 $GPU embedding.placement=device parallel.embedding_group=2 \
    parallel.overlap=prefetch parallel.transport=mpi output.metrics="$T/g2-dev-pf.jsonl"
same_losses "$T/g2-cpu-none.jsonl" "$T/g2-dev-pf.jsonl" \
    "G=2 < P=4: device tables under prefetch vs CPU overlap=none" 0 $TOL
for codec in bf16 int8; do
    W="parallel.rows_codec=$codec parallel.grads_codec=$codec"
    expect_ok train 2 device.type=cpu $W output.metrics="$T/$codec-cpu.jsonl"
    expect_ok train 2 $GPU embedding.placement=device parallel.transport=mpi $W \
        output.metrics="$T/$codec-dev.jsonl"
    same_losses "$T/$codec-cpu.jsonl" "$T/$codec-dev.jsonl" "codec $codec: device tables vs CPU" 0 $TOL
done
# resume across backends and placements: CPU (10 steps) -> device tables (to 20), and back
for way in cpu-dev dev-cpu; do
    first="device.type=cpu" second="$GPU embedding.placement=device"
    [ $way = dev-cpu ] && { first="$GPU embedding.placement=device" second="device.type=cpu"; }
    rm -rf "$T/ck-$way"
    expect_ok train 2 $first train.max_steps=10 output.checkpoint_dir="$T/ck-$way" \
        output.metrics="$T/res-$way.jsonl"
    expect_ok train 2 $second train.resume=auto output.checkpoint_dir="$T/ck-$way" \
        output.metrics="$T/res-$way.jsonl"
    same_losses "$T/hstu-cpu-2.jsonl" "$T/res-$way.jsonl" "resume $way continues the run" 0 $TOL
    state_same hstu-cpu-2 $way "resume $way: the state of the uninterrupted run"
done
# evaluation and recommend over device tables: scored in place (no copy of
# the shard up: the evaluation's h2d_bytes, the forward passes' inputs,
# below one shard's bytes: 20000 items of 16 floats over 2 ranks, 640000),
# the CPU's metrics and top-K lists
"$FS" data gen --users 64 --items 20000 --length uniform:5,40 --timestamps -o "$T/wide.h5" \
    >/dev/null || fail "data gen (wide)"
E="data.path=$T/wide.h5 train.final_eval=on train.max_steps=4"
expect_ok train 2 device.type=cpu $E output.metrics="$T/ev-cpu.jsonl" output.checkpoint_dir="$T/ev-ck"
expect_ok train 2 $GPU embedding.placement=device $E output.metrics="$T/ev-dev.jsonl"
evm() { grep '"split":"test"' "$1" | grep -o '"hr@10":[^,]*,"hr@50":[^,]*,\|"ndcg@10":[^,]*,\|"mrr":[^,}]*' | tr '\n' ' '; }
a=$(evm "$T/ev-cpu.jsonl") b=$(evm "$T/ev-dev.jsonl")
if [ "$DEV" = fake ]; then
    [ -n "$a" ] && [ "$a" = "$b" ] && pass "test metrics over device tables: the CPU's ($b)" ||
        fail "test metrics: CPU $a, device $b"
else
    [ -n "$b" ] && pass "test metrics over device tables: $b (CPU: $a)" || fail "no test metrics"
fi
h=$(grep '"split":"test"' "$T/ev-dev.jsonl" | grep -o '"h2d_bytes":[0-9.e+]*' | cut -d: -f2)
awk -v h="$h" 'BEGIN { exit !(h != "" && h + 0 < 640000) }' &&
    pass "the evaluation scored the shard in place: $h bytes up (a shard: 640000)" ||
    fail "the evaluation's h2d_bytes: '$h' (a copy of the shard: >= 640000)"
timeout 300 "$MPIRUN" -np 2 "$FS" recommend "$T/ev-ck/ckpt-4.h5" --top 5 -o "$T/rec-cpu.csv" \
    >"$T/rec-cpu.out" 2>&1 || fail "recommend on the CPU: $(tail -n 3 "$T/rec-cpu.out")"
timeout 300 "$MPIRUN" -np 2 "$FS" recommend "$T/ev-ck/ckpt-4.h5" $GPU embedding.placement=device \
    --top 5 -o "$T/rec-dev.csv" >"$T/rec-dev.out" 2>&1 ||
    fail "recommend over device tables: $(tail -n 3 "$T/rec-dev.out")"
if [ "$DEV" = fake ]; then
    [ -s "$T/rec-dev.csv" ] && cmp -s "$T/rec-cpu.csv" "$T/rec-dev.csv" &&
        pass "recommend over device tables: the CPU's lists ($(wc -l < "$T/rec-dev.csv") lines)" ||
        fail "recommend over device tables differs from the CPU's"
else
    [ -s "$T/rec-dev.csv" ] && pass "recommend over device tables: $(wc -l < "$T/rec-dev.csv") lines" ||
        fail "recommend over device tables: no output"
fi
finish
