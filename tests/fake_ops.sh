#!/bin/sh
# fake_ops: the CUDA-vs-CPU operation tests run on the fake device: every
# operation (tests/test_backend_ops) and whole models
# (tests/test_model_backends) through its guarded memory and deferred
# copies. Its operations are the CPU's, so these check the host side: every
# operand an operation is given is device memory, copies land where and
# when they should.
. "$(dirname "$0")/lib.sh"
B=$(dirname "$FS")/tests
expect_ok "$B/test_backend_ops" fake
tail -n 1 "$T/out"
expect_ok "$B/test_model_backends" fake
tail -n 1 "$T/out"
finish
