#!/bin/sh
# grad_tokens: the token assembly with item, event and user (contextual)
# features through HSTU and SASRec against the PyTorch oracle: the C
# program tests/test_tokens_grad writes the cases, tests/torch_tokens.py
# recomputes outputs and every gradient (tables, item rows, dense
# parameters). Exit 77 (skip) when torch is missing.
. "$(dirname "$0")/lib.sh"
oracle_test test_tokens_grad torch_tokens.py "$T/tokens.bin"
