#!/bin/sh
# mpirun-one: the tests' MPIRUN (tests/lib.sh need_mpirun). "-np 1 [-x
# VAR[=VALUE]]... PROGRAM ARGS" runs PROGRAM on its own, a singleton MPI
# job (MPI_Init starts its own runtime: no launcher, about a second less
# a run on 2 loaded cores); any other command line (more ranks, other
# options, several programs "A : B") goes to the real mpirun
# ($FREESCALE_MPIRUN) as it is.
one=0
if [ "$1" = -np ] && [ "$2" = 1 ]; then
    one=1
    for a in "$@"; do # an MPMD line (A : B) is mpirun's
        [ "$a" = : ] && one=0
    done
fi
if [ $one = 1 ]; then
    shift 2
    while [ "$1" = -x ]; do # VAR=VALUE set, VAR passed on: the environment's
        export "$2"
        shift 2
    done
    case $1 in
    -*) exec "$FREESCALE_MPIRUN" -np 1 "$@" ;; # another mpirun option
    esac
    exec "$@"
fi
exec "$FREESCALE_MPIRUN" "$@"
