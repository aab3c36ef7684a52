#!/bin/sh
# tests/grad_sasrec.sh: SASRec forward/backward checks for `make check`:
# tests/test_sasrec_grad (finite differences in C; writes the cases), then
# tests/torch_sasrec.py (PyTorch autograd on the same cases). Exit 77 (skip)
# when torch is missing, after the finite-difference check has passed.
. "$(dirname "$0")/lib.sh"
oracle_test test_sasrec_grad torch_sasrec.py "$T/x.bin"
