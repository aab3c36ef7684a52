#!/bin/sh
# grad_rank: a ranking step (actions summed and interleaved, a contextual
# token, candidates under the target mask, HSTU, the MLP head, BCE and MSE)
# against the PyTorch oracle: tests/test_rank_grad writes the cases,
# tests/torch_rank.py recomputes the outputs, the predictions, the loss and
# every gradient. Exit 77 (skip) when torch is missing.
. "$(dirname "$0")/lib.sh"

PROG="$(dirname "$FS")/tests/test_rank_grad"
if [ ! -x "$PROG" ]; then
    echo "FAIL: $PROG not built"
    exit 1
fi
"$PROG" "$T/rank.bin" || exit 1
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
    echo "SKIP: $PY cannot import torch"
    exit 77
fi
"$PY" "$(dirname "$0")/torch_rank.py" "$T/rank.bin"
