#!/bin/sh
# fake_train: the CUDA training test (device_train_body.sh) on the fake
# device, which runs the CPU's own operations behind the behaviour of a
# discrete GPU: every comparison with the CPU is exact (tolerance 0, the
# final state bit for bit), staged and direct (FREESCALE_FAKE_AWARE=1),
# every overlap mode, the IPC transports through shared memory.
. "$(dirname "$0")/lib.sh"
DEV=fake
. "$(dirname "$0")/device_train_body.sh"
