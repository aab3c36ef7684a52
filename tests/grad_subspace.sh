#!/bin/sh
# grad_subspace.sh: the gradient of a subspace table's stored part c
# (src/embedding/emb_subspace.c) against finite differences on 1 and 2
# ranks (tests/test_emb_subspace), then against PyTorch autograd
# (tests/torch_subspace.py, on the case the 1-rank run wrote). Exit 77
# (skip) when PyTorch is missing, after the C checks passed.
. "$(dirname "$0")/lib.sh"
need_mpirun
oracle_prog test_emb_subspace
for np in 1 2; do
    "$MPIRUN" -np $np "$PROG" "$T/s.bin" || { echo "FAIL: $PROG on $np ranks"; exit 1; }
done
oracle_torch torch_subspace.py "$T/s.bin"
