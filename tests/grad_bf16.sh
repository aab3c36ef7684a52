#!/bin/sh
# grad_bf16.sh: the CPU's bf16 GEMM emulation (device.precision = bf16):
# tests/test_bf16's own checks (the rounding's awkward values; gemm_bf16 =
# sgemm of the rounded operands; the fake device's bits), then PyTorch's
# rounding and bf16 matmul as the oracle (tests/torch_bf16.py). Exit 77
# (skip) when PyTorch is missing, after the C checks passed.
. "$(dirname "$0")/lib.sh"
oracle_test test_bf16 torch_bf16.py "$T/bf16.bin"
