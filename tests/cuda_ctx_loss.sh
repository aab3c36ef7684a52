#!/bin/sh
# cuda_ctx_loss: split_long, train.loss = full and in-batch negatives on the
# GPU match the CPU (the body: device_ctx_loss_body.sh). SKIP (77) when no
# GPU is usable or the build has no CUDA backend.
. "$(dirname "$0")/lib.sh"
DEV=cuda
. "$(dirname "$0")/device_ctx_loss_body.sh"
