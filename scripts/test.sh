#!/usr/bin/env bash
# scripts/test.sh: one command from a fresh clone to a tested build.
# Installs the Debian packages it needs (scripts/deps.sh), then runs
# autoreconf, configure, make and make check. Extra arguments go to
# configure. FREESCALE_TEST_JOBS: the tests run at once (default 2; CI
# runs 3 on its 2 cores: much of a test is mpirun's start-up and waits).
# Exit status: that of make check.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
freescale_install_deps
autoreconf -fi
./configure "$@"
make -j2
make -j"${FREESCALE_TEST_JOBS:-2}" check
