#!/bin/sh
# fake_device: the choice of a rank's device among the ranks of a node,
# with the fake device presenting what each rank sees (FREESCALE_FAKE_GPUS,
# its knob; one mpirun starting two programs stands for one node of a
# Slurm job):
#   - two tasks each shown its own GPU (srun --gpus-per-task=1): both train
#     without device.share, each on its own device;
#   - both shown the same one GPU: refused without device.share (the
#     message names FREESCALE_FAKE_GPUS, whose advice then works), trained
#     with it; the table's fit check divides the free memory among the
#     ranks sharing the device (FREESCALE_FAKE_MEM): a table that fits a
#     rank's own device is refused on a shared one;
#   - both shown both GPUs: each takes its own, no device.share needed;
#     that run on the asynchronous stream (FREESCALE_FAKE_ASYNC) with the
#     staged dense all-reduce (parallel.transport = mpi), whose read-back
#     leaves the step's end waiting for nothing: the device timers are read
#     once their events completed (src/train/gputime.c), not before;
# and the knobs' bad values are refused with the variable named.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 train.max_steps=2 train.final_eval=off device.type=fake"
# node GPUS_OF_RANK0 GPUS_OF_RANK1 [key=value ...]: a node of two tasks
node() {
    a=$1 b=$2; shift 2
    timeout 300 "$MPIRUN" -np 1 -x FREESCALE_FAKE_GPUS="$a" "$FS" train "$IN" $COMMON "$@" : \
        -np 1 -x FREESCALE_FAKE_GPUS="$b" "$FS" train "$IN" $COMMON "$@"
}

expect_ok node gpu0 gpu1
grep -q "^device: fake device 0 ('gpu0'.*this rank's own" "$T/out" &&
    pass "one GPU per task: each rank on its own device" ||
    fail "one GPU per task: $(grep '^device' "$T/out")"
expect_error "would share its device" node gpu0 gpu0
grep -q "set device.share=on" "$T/err" && pass "the error says what to do" ||
    fail "no advice in: $(head -c 300 "$T/err")"
grep -q "devices named in FREESCALE_FAKE_GPUS (comma-separated names, default fake0.*FREESCALE_FAKE_GPUS=fake0,fake1 gives 2 ranks one each" "$T/err" &&
    pass "on the fake device the error names FREESCALE_FAKE_GPUS" ||
    fail "FREESCALE_FAKE_GPUS not named: $(head -c 600 "$T/err")"
# the advice as given: two ranks of one mpirun, no device.share
expect_ok env FREESCALE_FAKE_GPUS=fake0,fake1 FREESCALE_FAKE_ASYNC=1000 timeout 300 "$MPIRUN" -np 2 \
    "$FS" train "$IN" $COMMON parallel.transport=mpi train.log_every=1
grep -q 'step 2/2 .*gpu [0-9.]* ms/step' "$T/out" &&
    pass "asynchronous stream: the device timers read a step late" ||
    fail "no device timers: $(grep 'step 2/2' "$T/out")"
[ "$(grep -c "^device: fake device [01] ('fake[01]'.*this rank's own" "$T/out")" -ge 1 ] &&
    pass "FREESCALE_FAKE_GPUS=fake0,fake1: each rank its own device" ||
    fail "the advice: $(grep '^device' "$T/out")"
expect_ok node gpu0 gpu0 device.share=on
grep -q "^device: .*shared by ranks of this node" "$T/out" && pass "sharing reported" ||
    fail "sharing not reported: $(grep '^device' "$T/out")"
expect_ok node gpu0,gpu1 gpu0,gpu1
grep -q "^device: fake device 0 ('gpu0'.*this rank's own" "$T/out" &&
    pass "both GPUs visible: rank 0 takes the first, rank 1 the other" ||
    fail "both visible: $(grep '^device' "$T/out")"
expect_ok node gpu1,gpu0 gpu1,gpu0 embedding.placement=device
grep -q "^device: fake device 0 ('gpu1'" "$T/out" && pass "devices taken in the order seen" ||
    fail "order: $(grep '^device' "$T/out")"

# the fit check: 200000 items at 2 ranks, d = 16 with Adagrad: 6.8 MB of
# table per rank; each device has 24 MiB, half of its free memory is room
"$FS" data gen --users 64 --items 200000 --length uniform:5,40 -o "$T/big.h5" >/dev/null ||
    fail "data gen"
export FREESCALE_FAKE_MEM=24M
BIG="data.path=$T/big.h5 embedding.placement=device device.share=on"
expect_ok node gpu0 gpu1 $BIG
grep -q '^embedding.placement: device' "$T/out" && pass "the table fits a rank's own device" ||
    fail "placement: $(grep placement "$T/out" | tail -n 1)"
expect_error "shared by 2 ranks" node gpu0 gpu0 $BIG
unset FREESCALE_FAKE_MEM

expect_error "FREESCALE_FAKE_MEM = 'lots'" env FREESCALE_FAKE_MEM=lots \
    "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON
expect_error "FREESCALE_FAKE_AWARE = 'yes'" env FREESCALE_FAKE_AWARE=yes \
    "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON
expect_error "FREESCALE_FAKE_GPUS = 'a,,b'" env FREESCALE_FAKE_GPUS=a,,b \
    "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON
expect_error "FREESCALE_FAKE_COPY_GBS = 'fast'" env FREESCALE_FAKE_ASYNC=4 FREESCALE_FAKE_COPY_GBS=fast \
    "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON
expect_error "FREESCALE_FAKE_COPY_GBS = '2' needs FREESCALE_FAKE_ASYNC" env FREESCALE_FAKE_COPY_GBS=2 \
    "$MPIRUN" -np 1 "$FS" train "$IN" $COMMON
finish
