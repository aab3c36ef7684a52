#!/bin/sh
# grad_rank: a ranking step (actions summed and interleaved, a contextual
# token, candidates under the target mask, HSTU, the MLP head, BCE and MSE)
# against the PyTorch oracle: tests/test_rank_grad writes the cases,
# tests/torch_rank.py recomputes the outputs, the predictions, the loss and
# every gradient. Exit 77 (skip) when torch is missing.
. "$(dirname "$0")/lib.sh"
oracle_test test_rank_grad torch_rank.py "$T/rank.bin"
