#!/bin/sh
# fake_placement: the device-placement test (device_placement_body.sh) on
# the fake device: item tables in its guarded memory, every exchange of
# device buffers (staged and direct) run for real, compared with the CPU
# exactly (tolerance 0, the final state bit for bit) at 1, 2 and 4 ranks,
# every overlap mode, G < P, codecs, resume across backends.
. "$(dirname "$0")/lib.sh"
DEV=fake
. "$(dirname "$0")/device_placement_body.sh"
