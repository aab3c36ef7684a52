#!/bin/sh
# fake_feat: features and ranking on the fake device equal the CPU at
# tolerance 0 (tests/device_feat_body.sh).
. "$(dirname "$0")/lib.sh"
DEV=fake
. "$(dirname "$0")/device_feat_body.sh"
