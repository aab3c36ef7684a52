#!/bin/sh
# tests/timed.sh: Automake's log compiler of the shell tests (Makefile.am,
# SH_LOG_COMPILER): runs the test as it is, then writes its wall seconds as
# the log's last line, "# seconds: N", so that .ci/run can list the
# slowest tests against its time budget. Called as "timed.sh SHELL TEST"
# (make's shell runs the test, as without the wrapper); the test's exit
# status is kept.
t0=$(date +%s)
"$@"
rc=$?
echo "# seconds: $(($(date +%s) - t0))"
exit $rc
