#!/bin/sh
# grad_hstu: gradients of the HSTU model on the CPU backend. First the C
# program tests/test_hstu_grad (finite differences; it writes two cases to
# files), then the PyTorch autograd oracle tests/torch_hstu.py on those
# files. Exit 77 (skip) when torch is missing, after the C check passed.
. "$(dirname "$0")/lib.sh"

PROG="$(dirname "$FS")/tests/test_hstu_grad"
if [ ! -x "$PROG" ]; then
    echo "FAIL: $PROG not built"
    exit 1
fi
"$PROG" "$T/hstu_a.bin" "$T/hstu_b.bin" || exit 1

if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
    echo "SKIP: $PY cannot import torch; finite differences passed"
    exit 77
fi
"$PY" "$(dirname "$0")/torch_hstu.py" "$T/hstu_a.bin" "$T/hstu_b.bin"
