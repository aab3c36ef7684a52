#!/bin/sh
# cuda_feat: features and ranking on the CUDA backend against the CPU
# (tests/device_feat_body.sh); SKIP (77) without a usable GPU.
. "$(dirname "$0")/lib.sh"
DEV=cuda
. "$(dirname "$0")/device_feat_body.sh"
