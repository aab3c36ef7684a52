#!/bin/sh
# cuda_placement: item tables in device memory (embedding.placement=device)
# train as the host tables do: 20 steps of tiny.in, HSTU and SASRec, at 1,
# 2 and 4 ranks sharing one GPU (device.share=on), against the CPU backend
# (1e-5) and against host placement on the same GPU; with the copy-engine
# transport and every overlap mode; a second identical run repeats the
# first; a checkpoint written by a CPU run resumes on the GPU with device
# placement and one written there resumes on the CPU, both continuing the
# uninterrupted run. Without a GPU: placement=device is refused on the CPU
# backend with a clear message, the rest SKIPs (77).
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 train.epochs=10 train.max_steps=20 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

expect_error "embedding.placement = device needs the CUDA backend" \
    train 1 device.type=cpu embedding.placement=device
if ! train 1 device.type=cuda train.max_steps=1 >"$T/probe" 2>&1; then
    [ "$failures" -eq 0 ] || finish
    echo "SKIP: no usable GPU: $(grep -o 'device.type=cuda: .*' "$T/probe" | head -n 1)"
    exit 77
fi
GPU="device.type=cuda device.share=on"
for model in hstu sasrec; do
    M="model.type=$model"
    for np in 1 2 4; do
        expect_ok train $np $M device.type=cpu output.metrics="$T/$model-cpu-$np.jsonl"
        expect_ok train $np $M $GPU embedding.placement=host parallel.transport=mpi \
            output.metrics="$T/$model-host-$np.jsonl"
        expect_ok train $np $M $GPU embedding.placement=device parallel.transport=mpi \
            output.metrics="$T/$model-dev-$np.jsonl"
        grep -q '^embedding.placement: device' "$T/out" && pass "device placement reported" ||
            fail "device placement not reported: $(grep placement "$T/out" | head -n 1)"
        same_losses "$T/$model-cpu-$np.jsonl" "$T/$model-dev-$np.jsonl" \
            "$model P=$np: device tables vs CPU" 0 1e-5
        same_losses "$T/$model-host-$np.jsonl" "$T/$model-dev-$np.jsonl" \
            "$model P=$np: device vs host tables on the GPU" 0 1e-6
    done
    expect_ok train 2 $M $GPU embedding.placement=device parallel.transport=mpi \
        output.metrics="$T/$model-dev-again.jsonl"
    same_losses "$T/$model-dev-2.jsonl" "$T/$model-dev-again.jsonl" "$model: a GPU run repeats" 0 1e-6
    for ov in none pipeline; do
        expect_ok train 2 $M $GPU embedding.placement=device parallel.overlap=$ov \
            parallel.transport=mpi output.metrics="$T/$model-dev-$ov.jsonl"
        same_losses "$T/$model-dev-2.jsonl" "$T/$model-dev-$ov.jsonl" "$model: overlap=$ov" 0 1e-6
    done
    expect_ok train 2 $M $GPU embedding.placement=device parallel.transport=copy-engine \
        output.metrics="$T/$model-dev-ce.jsonl"
    same_losses "$T/$model-dev-2.jsonl" "$T/$model-dev-ce.jsonl" "$model: copy-engine" 0 1e-5
done
# resume across placements: CPU (10 steps) -> GPU device tables (to 20), and back
for way in cpu-gpu gpu-cpu; do
    first="device.type=cpu" second="$GPU embedding.placement=device"
    [ $way = gpu-cpu ] && { first="$GPU embedding.placement=device" second="device.type=cpu"; }
    rm -rf "$T/ck-$way"
    expect_ok train 2 $first train.max_steps=10 output.checkpoint_dir="$T/ck-$way" \
        output.metrics="$T/res-$way.jsonl"
    expect_ok train 2 $second train.resume=auto output.checkpoint_dir="$T/ck-$way" \
        output.metrics="$T/res-$way.jsonl"
    same_losses "$T/hstu-cpu-2.jsonl" "$T/res-$way.jsonl" "resume $way continues the run" 0 1e-5
done
finish
