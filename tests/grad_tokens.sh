#!/bin/sh
# grad_tokens: the token assembly with item, event and user (contextual)
# features through HSTU and SASRec against the PyTorch oracle: the C
# program tests/test_tokens_grad writes the cases, tests/torch_tokens.py
# recomputes outputs and every gradient (tables, item rows, dense
# parameters). Exit 77 (skip) when torch is missing.
. "$(dirname "$0")/lib.sh"

PROG="$(dirname "$FS")/tests/test_tokens_grad"
if [ ! -x "$PROG" ]; then
    echo "FAIL: $PROG not built"
    exit 1
fi
"$PROG" "$T/tokens.bin" || exit 1
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
    echo "SKIP: $PY cannot import torch"
    exit 77
fi
"$PY" "$(dirname "$0")/torch_tokens.py" "$T/tokens.bin"
