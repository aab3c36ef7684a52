#!/bin/sh
# tests/timed.sh: Automake's log compiler of the shell tests (Makefile.am,
# SH_LOG_COMPILER): runs the test as it is, then writes its wall seconds as
# the log's last line, "# seconds: N", so that .ci/run can list the
# slowest tests against its time budget. The test's exit status is kept.
t0=$(date +%s)
sh "$@"
rc=$?
echo "# seconds: $(($(date +%s) - t0))"
exit $rc
