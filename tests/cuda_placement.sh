#!/bin/sh
# cuda_placement: item tables in GPU memory train as host tables do (the
# body, shared with fake_placement.sh: device_placement_body.sh). Without a
# GPU: placement=device is refused on the CPU backend, the rest SKIPs (77).
. "$(dirname "$0")/lib.sh"
DEV=cuda
. "$(dirname "$0")/device_placement_body.sh"
