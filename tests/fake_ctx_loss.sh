#!/bin/sh
# fake_ctx_loss: split_long, train.loss = full and in-batch negatives on the
# fake device equal the CPU's losses at tolerance 0, P = 1, 2, 3 (the body:
# device_ctx_loss_body.sh).
. "$(dirname "$0")/lib.sh"
DEV=fake
. "$(dirname "$0")/device_ctx_loss_body.sh"
