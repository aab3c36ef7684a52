#!/bin/sh
# tests/mpi-run.sh: Automake log compiler for the test programs.
# Called as "mpi-run.sh DIR/NAME.npN": runs the program DIR/NAME on N ranks
# under mpirun with the environment this machine needs (root, more ranks
# than cores). No launcher means exit 77 (skip), never a silent pass.
# Called with any other name (a unit test): runs it as it is.
test_file=$1
case $test_file in
    *.np[0-9]*) ;;
    *) exec "$@" ;;
esac
np=${test_file##*.np}
prog=${test_file%.np*}
# the program lives in the build tree even when the name came via srcdir
[ -x "$prog" ] || prog=./tests/$(basename "$prog")
if [ ! -x "$prog" ]; then
    echo "mpi-run.sh: test program $prog not built" >&2
    exit 99
fi
MPIRUN=${MPIRUN:-$(command -v mpirun)}
if [ -z "$MPIRUN" ] || [ ! -x "$MPIRUN" ]; then
    echo "SKIP: mpirun not found (install openmpi-bin)"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Shared-memory single-copy (CMA) needs ptrace rights containers often lack.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# one BLAS thread per rank: the tests oversubscribe the cores
export OPENBLAS_NUM_THREADS=1
# waiting ranks yield their core (several tests run at once; tests/lib.sh)
export OMPI_MCA_mpi_yield_when_idle=1
exec timeout 300 "$MPIRUN" -np "$np" "$prog"
