#!/bin/sh
# tests/grad_sasrec.sh: SASRec forward/backward checks for `make check`:
# tests/test_sasrec_grad (finite differences in C; writes the cases), then
# tests/torch_sasrec.py (PyTorch autograd on the same cases). Exit 77 (skip)
# when torch is missing, after the finite-difference check has passed.
. "$(dirname "$0")/lib.sh"
"$(dirname "$FS")/tests/test_sasrec_grad" "$T/x.bin" || exit 1
if ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
    echo "torch not importable by /usr/bin/python3: skip the autograd comparison"
    exit 77
fi
/usr/bin/python3 "$(dirname "$0")/torch_sasrec.py" "$T/x.bin"
