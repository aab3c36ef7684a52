#!/bin/sh
# cli_device: device selection on whatever this machine has. The banner
# names the backends compiled in; device.type=auto trains (on the CPU with a
# notice when no GPU is usable); device.type=cuda without a usable GPU or
# without the CUDA build is a clear error; nonsense combinations are refused.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 train.max_steps=2 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

expect_ok "$FS" --version
grep -q '^backends: cpu' "$T/out" && pass "--version lists the backends: $(grep backends "$T/out")" ||
    fail "--version lacks the backends line"
expect_ok train 1 device.type=auto
grep -q 'backends: cpu' "$T/out" && pass "banner lists the backends" || fail "banner lacks backends"
if grep -q '^device: ' "$T/out"; then
    pass "device.type=auto picked a GPU: $(grep '^device: ' "$T/out")"
else
    grep -q 'notice: device.type=auto: running on the CPU' "$T/out" &&
        pass "device.type=auto falls back with a notice: $(grep notice "$T/out")" ||
        fail "device.type=auto on the CPU without a notice"
    expect_error "device.type=cuda: " train 2 device.type=cuda
    grep -qE 'no usable GPU|configure --with-cuda' "$T/err" &&
        pass "the error gives the reason" || fail "no reason in: $(head -c 300 "$T/err")"
fi
expect_ok train 1 device.type=cpu
grep -q '^backend cpu' "$T/out" && pass "device.type=cpu runs on the CPU" || fail "not on the CPU"
expect_error "device.staging = direct: the cpu backend has no device buffers; use" train 1 device.type=cpu device.staging=direct
expect_error "device.type = 'gpu': expected one of auto|cpu|cuda|fake" train 1 device.type=gpu
finish
