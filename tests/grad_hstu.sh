#!/bin/sh
# grad_hstu: gradients of the HSTU model on the CPU backend. First the C
# program tests/test_hstu_grad (finite differences; it writes two cases to
# files), then the PyTorch autograd oracle tests/torch_hstu.py on those
# files. Exit 77 (skip) when torch is missing, after the C check passed.
# Cases C and D: model.last_layer = targets (the last layer at the read rows
# alone), against the full layer in C and against PyTorch's full model.
. "$(dirname "$0")/lib.sh"
oracle_test test_hstu_grad torch_hstu.py "$T/hstu_a.bin" "$T/hstu_b.bin" "$T/hstu_c.bin" \
    "$T/hstu_d.bin"
