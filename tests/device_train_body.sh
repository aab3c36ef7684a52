# device_train_body.sh: the body of tests/cuda_train.sh and
# tests/fake_train.sh, sourced after lib.sh with DEV = cuda | fake.
#
# Training on the device matches training on the CPU: 20 steps of tiny.in
# at 2 ranks sharing one device (device.share=on), HSTU and SASRec, with
# dropout (keyed masks agree across backends), staged through pinned host
# memory and with device pointers given to MPI directly (CUDA: when MPI is
# CUDA-aware; the fake device acts CUDA-aware with FREESCALE_FAKE_AWARE=1);
# every overlap mode gives the same losses on the device; the intra-node
# transports (parallel.transport = copy-engine | kernel: CUDA IPC, shared
# memory on the fake device) give the losses of transport=mpi. On the fake
# device (the CPU's own operations) everything is exact: tolerance 0, and
# the final state bit for bit. CUDA: SKIP (77) when no GPU is usable or the
# build has no CUDA backend.
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 train.epochs=10 train.max_steps=20 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
GPU="device.type=$DEV device.share=on"
if [ "$DEV" = fake ]; then
    TOL=0 TOL_DEV=0 TOL_IPC4=1e-6
else
    # CUDA: other summation orders (cuBLAS, the kernels' reductions) than
    # the CPU's; two GPU runs of the IPC transports differ in the last bits
    TOL=1e-3 TOL_DEV=1e-5 TOL_IPC4=1e-5
fi
# state_of RUN: the checkpoint a run wrote with output.checkpoint_dir=$T/ck-RUN
ck() { echo "output.checkpoint_dir=$T/ck-$1"; }
state_same() { [ "$DEV" = fake ] && same_state "$T/ck-$1/ckpt-20.h5" "$T/ck-$2/ckpt-20.h5" "$3"; }

if ! train 1 device.type=$DEV train.max_steps=1 >"$T/probe" 2>&1; then
    [ "$DEV" = fake ] && { fail "the fake device does not train: $(tail -c 300 "$T/probe")"; finish; }
    echo "SKIP: no usable GPU: $(grep -o 'device.type=cuda: .*' "$T/probe" | head -n 1)"
    exit 77
fi
grep '^device: ' "$T/probe"
for model in hstu sasrec; do
    loss=softmax; [ $model = sasrec ] && loss=bce
    M="model.type=$model train.loss=$loss"
    expect_ok train 2 $M device.type=cpu output.metrics="$T/$model-cpu.jsonl" $(ck $model-cpu)
    expect_ok train 2 $M $GPU device.staging=host parallel.transport=mpi \
        output.metrics="$T/$model-dev.jsonl" $(ck $model-dev)
    same_losses "$T/$model-cpu.jsonl" "$T/$model-dev.jsonl" "$model: $DEV (staged) vs CPU" 0 $TOL
    state_same $model-cpu $model-dev "$model: $DEV (staged) vs CPU"
    for ov in none pipeline; do
        expect_ok train 2 $M $GPU parallel.overlap=$ov parallel.transport=mpi \
            output.metrics="$T/$model-dev-$ov.jsonl"
        same_losses "$T/$model-dev.jsonl" "$T/$model-dev-$ov.jsonl" "$model on $DEV: overlap=$ov" 0 $TOL_DEV
    done
    [ "$DEV" = fake ] && export FREESCALE_FAKE_AWARE=1
    if train 2 $M $GPU device.staging=direct parallel.transport=mpi \
        output.metrics="$T/$model-direct.jsonl" $(ck $model-direct) >"$T/out" 2>"$T/err"; then
        grep -q 'go to CUDA-aware MPI directly' "$T/out" && pass "$model: direct path in use" ||
            fail "$model: staging=direct not reported: $(grep '^device' "$T/out")"
        same_losses "$T/$model-cpu.jsonl" "$T/$model-direct.jsonl" "$model: $DEV (direct) vs CPU" 0 $TOL
        state_same $model-cpu $model-direct "$model: $DEV (direct) vs CPU"
    elif [ "$DEV" = cuda ] && grep -q 'is not CUDA-aware' "$T/err"; then
        pass "$model: staging=direct refused: MPI is not CUDA-aware here (that path is untested)"
    else
        fail "$model: staging=direct failed: $(head -c 300 "$T/err")"
    fi
    unset FREESCALE_FAKE_AWARE
done
[ "$DEV" = fake ] && expect_error "the fake device acts CUDA-aware with FREESCALE_FAKE_AWARE=1" \
    train 2 $GPU device.staging=direct
# The intra-node transports against mpi (the staged run above), with the
# default overlap (prioritized: buckets are off under IPC) and with none.
# At 2 ranks a + b is b + a: the same sums. At 4 not bit-identical: the IPC
# reduction adds the ranks' slices in node-rank order (the same bits on
# every rank), MPI in its own order; on a GPU two runs differ in the last
# bits anyway. auto picks copy-engine here (2 ranks on the node) and says so.
for tp in copy-engine kernel; do
    for ov in prioritized none; do
        expect_ok train 2 $GPU parallel.transport=$tp parallel.overlap=$ov \
            output.metrics="$T/tp-$tp-$ov.jsonl"
        grep -q "^parallel.transport: $tp" "$T/out" && pass "transport $tp in use" ||
            fail "transport $tp not reported: $(grep 'transport' "$T/out" | head -n 1)"
        same_losses "$T/hstu-dev.jsonl" "$T/tp-$tp-$ov.jsonl" \
            "hstu on $DEV: transport=$tp overlap=$ov vs mpi" 0 $TOL_DEV
    done
done
same_losses "$T/tp-copy-engine-none.jsonl" "$T/tp-kernel-none.jsonl" \
    "copy-engine and kernel: the same sums" 0 $TOL_DEV
expect_ok train 2 $GPU output.metrics="$T/tp-auto.jsonl"
grep -q "^parallel.transport: copy-engine (chosen by auto)" "$T/out" &&
    pass "auto chose copy-engine" || fail "auto: $(grep 'transport' "$T/out" | head -n 1)"
expect_ok train 4 $GPU parallel.transport=copy-engine output.metrics="$T/tp-4.jsonl"
expect_ok train 4 $GPU parallel.transport=mpi output.metrics="$T/mpi-4.jsonl"
same_losses "$T/mpi-4.jsonl" "$T/tp-4.jsonl" "P=4: copy-engine vs mpi" 0 $TOL_IPC4
# more ranks than devices without device.share
if [ "$DEV" = fake ]; then
    expect_error "set device.share=on" train 2 device.type=fake
else
    n=$(nvidia-smi -L 2>/dev/null | wc -l)
    [ "$n" -ge 1 ] && expect_error "set device.share=on" train $((n + 1)) device.type=cuda
fi
finish
