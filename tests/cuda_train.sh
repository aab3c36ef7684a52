#!/bin/sh
# cuda_train: training on the GPU matches training on the CPU (the body,
# shared with fake_train.sh: device_train_body.sh). SKIP (77) when no GPU
# is usable or the build has no CUDA backend.
. "$(dirname "$0")/lib.sh"
DEV=cuda
. "$(dirname "$0")/device_train_body.sh"
