#!/bin/sh
# grad_loss.sh: the training losses (src/model/loss.c) against finite differences
# and the sampler checks (tests/test_loss), then against PyTorch autograd
# (tests/torch_loss.py, on the cases test_loss wrote). Exit 77 (skip) when
# PyTorch is missing, after the C checks passed.
. "$(dirname "$0")/lib.sh"

PROG="$(dirname "$FS")/tests/test_loss"
if ! "$PROG" "$T/l.bin"; then
    echo "FAIL: $PROG"
    exit 1
fi
if ! "$PY" -c 'import torch' 2>/dev/null; then
    echo "skip: PyTorch not importable by $PY"
    exit 77
fi
"$PY" "$(dirname "$0")/torch_loss.py" "$T/l.bin"
