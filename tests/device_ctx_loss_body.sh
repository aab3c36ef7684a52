# device_ctx_loss_body.sh: the body of tests/fake_ctx_loss.sh and
# tests/cuda_ctx_loss.sh, sourced after lib.sh with DEV = fake | cuda.
#
# What only the CPU backend had runs on the device and gives the CPU's
# losses: parallel.split_long (context-parallel attention, keys and values
# exchanged from device buffers; HSTU with the time bias and SASRec, every
# sequence cut into P chunks, at P = 1 too: chunks on one rank),
# train.loss = full and train.negatives_from = in_batch | mixed, at P = 1, 2
# and 3, with host tables and (P = 2) device tables, the full softmax also in
# small blocks (debug.full_logits: the device's passes of several blocks); split_long's keys and
# values and the full softmax's vectors and gradients handed to MPI as
# device buffers (device.staging = direct; on CUDA only with CUDA-aware
# MPI) at P = 3. The fake device runs
# the CPU's own operations: tolerance 0. CUDA: other summation orders, 1e-3;
# SKIP (77) when no GPU is usable or the build has no CUDA backend.
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 24 --items 150 --length pareto:20,1.1 --max-length 200 --timestamps \
    -o "$T/long.h5" >/dev/null 2>&1 || { fail "data gen"; finish; }
COMMON="data.path=$T/long.h5 data.max_seq_len=256 model.layers=2 model.heads=2 model.dim=16
train.epochs=10 train.max_steps=3 train.batch_size=8 train.log_every=1 train.eval_every=0
train.final_eval=off device.share=on"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
TOL=0
[ "$DEV" = cuda ] && TOL=1e-3
if ! train 1 device.type=$DEV train.max_steps=1 >"$T/probe" 2>&1; then
    [ "$DEV" = fake ] && { fail "the fake device does not train: $(tail -c 300 "$T/probe")"; finish; }
    echo "SKIP: no usable GPU: $(grep -o 'device.type=cuda: .*' "$T/probe" | head -n 1)"
    exit 77
fi
# cmp NAME NP OVERRIDES...: the device's losses against the CPU's
cmp() {
    name=$1 np=$2
    shift 2
    expect_ok train $np device.type=cpu "$@" output.metrics="$T/$name-cpu.jsonl"
    expect_ok train $np device.type=$DEV "$@" output.metrics="$T/$name-dev.jsonl"
    same_losses "$T/$name-cpu.jsonl" "$T/$name-dev.jsonl" "$name: $DEV vs CPU, P=$np" 0 $TOL
}
for np in 1 2 3; do
    k=$np
    [ $np = 1 ] && k=2
    cmp hstu-split-$np $np parallel.split_long=auto debug.split_chunks=$k
    grep -q 'split_long: [0-9]* sequences* cut into' "$T/out" && pass "P=$np: sequences cut" ||
        fail "P=$np: nothing was cut"
    cmp sasrec-split-$np $np model.type=sasrec train.loss=softmax parallel.split_long=auto \
        debug.split_chunks=$k
    cmp full-$np $np train.loss=full
    cmp in_batch-$np $np train.negatives_from=in_batch
done
cmp mixed-2 2 train.negatives_from=mixed model.type=sasrec
# the full softmax in blocks: the CPU scores blocks of at most
# debug.full_logits logits, the device several blocks a pass (its free
# memory), summed in the CPU's blocks: one item block per shard (20000:
# blocks of 263 positions at P = 2) and several (3000: 256 positions
# against 11 items a block)
for L in 20000 3000; do
    cmp full-blocks-$L 2 train.loss=full debug.full_logits=$L
done
# split_long and the full softmax with the device buffers handed to
# (CUDA-aware) MPI
[ "$DEV" = fake ] && export FREESCALE_FAKE_AWARE=1
for run in hstu-split sasrec-split full; do
    case $run in
        hstu-split) O="parallel.split_long=auto debug.split_chunks=3" ;;
        sasrec-split) O="model.type=sasrec train.loss=softmax parallel.split_long=auto debug.split_chunks=3" ;;
        full) O="train.loss=full" ;;
    esac
    direct_run "$run, direct: $DEV vs CPU, P=3" "$T/$run-3-cpu.jsonl" "$T/direct-$run.jsonl" $TOL \
        train 3 device.type=$DEV $O device.staging=direct output.metrics="$T/direct-$run.jsonl"
done
unset FREESCALE_FAKE_AWARE
# device tables: the exchange's index and rows in device memory
for L in train.loss=full train.negatives_from=in_batch; do
    expect_ok train 2 device.type=$DEV embedding.placement=device $L \
        output.metrics="$T/devtab.jsonl"
    n=${L#*=}
    same_losses "$T/$n-2-cpu.jsonl" "$T/devtab.jsonl" "$L, device tables: $DEV vs CPU, P=2" 0 $TOL
done
finish
