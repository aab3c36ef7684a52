#!/bin/sh
# grad_loss.sh: the training losses (src/model/loss.c) against finite differences
# and the sampler checks (tests/test_loss), then against PyTorch autograd
# (tests/torch_loss.py, on the cases test_loss wrote). Exit 77 (skip) when
# PyTorch is missing, after the C checks passed.
. "$(dirname "$0")/lib.sh"
oracle_test test_loss torch_loss.py "$T/l.bin"
