# tests/lib.sh: helpers for the shell tests of the command line.
# Source it; it sets $FS (the program), $T (a fresh temporary directory,
# removed on exit, also when stopped by SIGINT or SIGTERM) and the failure
# counter.
set -u
FS=${FREESCALE:-$(cd "$(dirname "$0")/.." && pwd)/freescale}
TOP_SRCDIR=${TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
T=$(mktemp -d "${TMPDIR:-/tmp}/fs-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# expect_error "substring" cmd args...: the command must exit non-zero and
# print the substring on stderr.
expect_error() {
    want=$1; shift
    if "$@" >"$T/out" 2>"$T/err"; then
        fail "expected failure: $* (stdout: $(head -c 300 "$T/out"))"
    elif grep -qF -- "$want" "$T/err"; then
        pass "refused with '$want': $*"
    else
        fail "expected '$want' from: $*; got: $(head -c 500 "$T/err")"
    fi
}

# error_once NP WANT ARGS...: freescale ARGS on NP ranks ($MPIRUN) fails
# with WANT on the one "freescale: error" line of its stderr and without
# Open MPI's abort text (MPI_ABORT, ORTE_ERROR_LOG); under Open MPI's
# mpirun -q, which drops mpirun's notice of a non-zero exit ("Primary job
# terminated normally ..."), that line is all it prints besides warnings
# (doc/robustness.md).
error_once() {
    eo_np=$1 eo_want=$2
    shift 2
    if "$MPIRUN" -np "$eo_np" "$FS" "$@" >"$T/out" 2>"$T/err"; then
        fail "expected failure on $eo_np ranks: $*"
        return
    fi
    eo_n=$(grep -c '^freescale: error' "$T/err")
    if [ "$eo_n" != 1 ] || ! grep '^freescale: error' "$T/err" | grep -qF -- "$eo_want"; then
        fail "expected '$eo_want' once on $eo_np ranks, got $eo_n error lines: $(head -c 600 "$T/err")"
    elif grep -qE 'MPI_ABORT|ORTE_ERROR_LOG' "$T/err"; then
        fail "Open MPI's abort text after '$eo_want': $(head -c 600 "$T/err")"
    elif ! "$MPIRUN" --version 2>/dev/null | grep -q 'Open MPI'; then
        pass "once on $eo_np ranks, no abort text: $eo_want"
    elif "$MPIRUN" -q -np "$eo_np" "$FS" "$@" >"$T/out" 2>"$T/err"; then
        fail "expected failure under mpirun -q on $eo_np ranks: $*"
    elif [ "$(grep -vc '^freescale: warning' "$T/err")" != 1 ] || [ -s "$T/out" ]; then
        fail "under mpirun -q, more than the error: $(head -c 600 "$T/err") $(head -c 200 "$T/out")"
    else
        pass "once on $eo_np ranks, no abort text, alone under mpirun -q: $eo_want"
    fi
}

# expect_ok cmd args...: the command must succeed; its stdout is in $T/out.
expect_ok() {
    if "$@" >"$T/out" 2>"$T/err"; then
        pass "$*"
    else
        fail "failed: $*: $(head -c 500 "$T/err")"
    fi
}

# no_file PATH: nothing (not even a temporary PATH.tmp.*) was left behind.
no_file() {
    if ls "$1" "$1".tmp.* >/dev/null 2>&1; then
        fail "file left behind: $(ls "$1" "$1".tmp.* 2>/dev/null | tr '\n' ' ')"
    else
        pass "nothing left at $1"
    fi
}

# The Debian Python with h5py/numpy, when present (test oracles).
PY=/usr/bin/python3
have_h5py() { [ -x "$PY" ] && "$PY" -c 'import h5py, numpy' 2>/dev/null; }

# The oracle tests (grad_*.sh): a C program writes its cases after its own
# checks, then a PyTorch script recomputes them.
# oracle_prog NAME: PROG = the test program tests/NAME (a failure when it
# was not built)
oracle_prog() {
    PROG="$(dirname "$FS")/tests/$1"
    [ -x "$PROG" ] || { echo "FAIL: $PROG not built"; exit 1; }
}
# oracle_torch SCRIPT FILE...: the PyTorch oracle tests/SCRIPT on the
# cases the C program wrote; the test's exit code is the oracle's. Exit 77
# (skip) when $PY cannot import torch and numpy: the C checks have passed.
oracle_torch() {
    if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
        echo "SKIP: $PY cannot import torch and numpy; the C checks passed"
        exit 77
    fi
    _script=$1; shift
    "$PY" "$TOP_SRCDIR/tests/$_script" "$@"
    exit $?
}
# oracle_test NAME SCRIPT FILE...: tests/NAME FILE... (its own checks; a
# failure fails the test), then oracle_torch SCRIPT FILE...
oracle_test() {
    oracle_prog "$1"
    _script=$2; shift 2
    "$PROG" "$@" || { echo "FAIL: $PROG"; exit 1; }
    oracle_torch "$_script" "$@"
}

# need_mpirun: skip (77) without a launcher; otherwise set what Open MPI
# needs here (root, more ranks than cores, no CMA) and one BLAS thread.
need_mpirun() {
    if [ -z "${MPIRUN:-}" ] || [ ! -x "$MPIRUN" ]; then
        echo "SKIP: mpirun not found"
        exit 77
    fi
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
    export OPENBLAS_NUM_THREADS=1
    # a rank waiting in MPI yields its core: the suite runs several tests at
    # once on 2 cores, and Open MPI busy-polls otherwise (it yields by itself
    # only when one mpirun oversubscribes): cli_rank 163 -> 94 s under load
    export OMPI_MCA_mpi_yield_when_idle=1
    # one rank runs as a singleton job, without mpirun (tests/mpirun-one.sh)
    if [ -z "${FREESCALE_MPIRUN:-}" ]; then
        FREESCALE_MPIRUN=$MPIRUN MPIRUN=$TOP_SRCDIR/tests/mpirun-one.sh
        export FREESCALE_MPIRUN MPIRUN
    fi
}

finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$failures check(s) failed"
        exit 1
    fi
    exit 0
}

# losses of a metrics file, one "step loss" pair per line (steps > FROM)
losses() { sed -n 's/.*"event":"train".*"step":\([0-9]*\),"loss":\([^,]*\),.*/\1 \2/p' "$1" |
    awk -v from="${2:-0}" '$1 > from'; }
# same_losses A B NAME [FROM] [TOL]: the train losses of A and B (steps >
# FROM) agree to TOL (default 1e-4) relative, step by step
same_losses() {
    losses "$1" "${4:-0}" > "$T/la"; losses "$2" "${4:-0}" > "$T/lb"
    if [ ! -s "$T/la" ] || [ "$(wc -l < "$T/la")" != "$(wc -l < "$T/lb")" ]; then
        fail "$3: different numbers of steps ($(wc -l < "$T/la") vs $(wc -l < "$T/lb"))"
        return
    fi
    worst=$(paste "$T/la" "$T/lb" | awk '{ if ($1 != $3) { print "step"; exit }
        d = $2 - $4; if (d < 0) d = -d; m = $4 < 0 ? -$4 : $4; r = d / (m > 1e-12 ? m : 1e-12);
        if (r > w) w = r } END { printf "%.3g", w }')
    if [ "$worst" = step ]; then fail "$3: steps differ"
    elif awk -v w="$worst" -v tol="${5:-1e-4}" 'BEGIN { exit !(w <= tol) }'; then pass "$3: losses agree (worst $worst)"
    else fail "$3: losses differ by $worst relative"; fi
}

# same_evals A B NAME TOL: the metrics of every eval line of two metrics files
# agree (absolute TOL; the evaluation's device bytes, h2d/d2h_bytes, are not
# metrics)
same_evals() {
    ev() { sed 's/,"[hd]2[hd]_bytes":[^,}]*//g' "$1" | sed -n 's/.*"event":"eval","split":"\([a-z]*\)".*"step":\([0-9]*\),"loss":[^,]*,"samples_per_s":[^,]*,"tokens_per_s":[^,]*,\(.*\)}.*/\1 \2 \3/p' |
        tr ',:' '  ' | tr -d '"'; }
    ev "$1" > "$T/ea"; ev "$2" > "$T/eb"
    if [ ! -s "$T/ea" ] || [ "$(wc -l < "$T/ea")" != "$(wc -l < "$T/eb")" ]; then
        fail "$3: eval lines $(wc -l < "$T/ea") vs $(wc -l < "$T/eb")"; return; fi
    worst=$(paste -d' ' "$T/ea" "$T/eb" | awk '{ h = NF / 2; for (i = 1; i <= h; i++) {
        if ($i ~ /^[0-9.e+-]+$/) { d = $i - $(i + h); if (d < 0) d = -d; if (d > w) w = d }
        else if ($i != $(i + h)) { print "names"; exit } } } END { printf "%.3g", w }')
    if [ "$worst" = names ]; then fail "$3: eval lines differ in their fields"
    elif awk -v w="$worst" -v t="$4" 'BEGIN { exit !(w <= t) }'; then pass "$3: metrics agree (worst $worst)"
    else fail "$3: metrics differ by $worst"; fi
}

# resumed_no_search OUT WHAT CANDIDATE LINE: a run resumed with an auto
# choice (train.tune, model.factors_lr = auto; cmd/train_tune.c), its
# output OUT, ran no candidate (no line with CANDIDATE) and said LINE (the
# whole line) of the stored choice it reuses
resumed_no_search() {
    if grep -qF "$3" "$1"; then fail "$2 resumed: it searched again"
    elif grep -qxF "$4" "$1"; then pass "$2 resumed: the stored choice reused (${4##*: })"
    else fail "$2 resumed: $(grep -F "$2:" "$1" | head -3)"; fi
}

# run NAME NP ARGS...: `freescale train $IN $COMMON ARGS` on NP ranks (the
# caller sets IN and COMMON), metrics in $T/NAME.jsonl, output in
# $T/NAME.out; a failed run is a failure. identical NAME A B: the
# step/loss listings of A and B are identical (bit for bit). The
# dynamic tables' tests (cli_dynamic.sh, fake_dynamic.sh) use both.
run() {
    rn=$1 rp=$2; shift 2
    if "$MPIRUN" -np "$rp" "$FS" train "$IN" $COMMON "output.metrics=$T/$rn.jsonl" "$@" \
        >"$T/$rn.out" 2>&1; then :; else fail "$rn: $(tail -3 "$T/$rn.out")"; fi
}
identical() {
    losses "$2" > "$T/la"; losses "$3" > "$T/lb"
    if [ -s "$T/la" ] && cmp -s "$T/la" "$T/lb"; then pass "$1: losses identical ($(wc -l < "$T/la") steps)"
    else fail "$1: losses differ: $(diff "$T/la" "$T/lb" | head -n 3 | tr '\n' ' ')"; fi
}

# same_state A B NAME: two checkpoints hold the same model, optimizer state
# and tables bit for bit (h5diff of every dataset; the parameters dumped as
# attributes may differ).
same_state() {
    if ! command -v h5diff >/dev/null 2>&1; then
        pass "$3: state not compared (h5diff, of hdf5-tools, is not installed)"
        return
    fi
    for obj in /dense /dense_m /dense_v /emb; do
        if ! h5diff -q "$1" "$2" $obj $obj >/dev/null 2>&1; then
            fail "$3: $obj differs: $(h5diff -r "$1" "$2" $obj $obj 2>&1 | head -n 3 | tr '\n' ' ')"
            return
        fi
    done
    pass "$3: the same state bit for bit"
}

# tiny_data: the dataset of input/tiny.in in $T/tiny.h5, and IN = that file.
# direct_run NAME REF OUT TOL CMD...: CMD, a run with device.staging=direct
# writing metrics OUT, gives REF's losses within TOL; on CUDA a refusal
# because MPI is not CUDA-aware passes (that path is then untested)
direct_run() {
    dr_name=$1 dr_ref=$2 dr_out=$3 dr_tol=$4
    shift 4
    if "$@" >"$T/out" 2>"$T/err"; then
        same_losses "$dr_ref" "$dr_out" "$dr_name" 0 "$dr_tol"
    elif [ "${DEV:-}" = cuda ] && grep -q 'is not CUDA-aware' "$T/err"; then
        pass "$dr_name: staging=direct refused: MPI is not CUDA-aware here (that path is untested)"
    else
        fail "$dr_name: $(head -c 400 "$T/err")"
    fi
}

tiny_data() {
    IN="$TOP_SRCDIR/input/tiny.in"
    "$FS" data gen --users 64 --items 200 --length uniform:5,40 --timestamps -o "$T/tiny.h5" \
        >/dev/null || { fail "data gen"; finish; }
}

# need_cluster N: skip (77) where network namespaces are refused (not root,
# no ip, nsenter or flock, refused by the kernel); else bring up N nodes of
# scripts/cluster.sh (its state in $T/cluster), taken down on exit. Sets CL
# (the script); exports MPIRUN for it. The namespaces' names are the
# machine's, so the tests that need a cluster take turns: the test runs
# again (sh "$0", no arguments) under flock(1) on CLUSTER_LOCK, which it
# holds until it ends, waiting for it without a time limit (a test that
# holds it ends by itself); flock -o: no process the test starts holds the
# lock after the test. Holding the lock, a cluster that is up was left by a
# person (or by a test that was killed): a failure that says so.
CLUSTER_LOCK=${FREESCALE_CLUSTER_LOCK:-/run/lock/freescale-cluster.lock}
[ -d "${CLUSTER_LOCK%/*}" ] || CLUSTER_LOCK=/tmp/freescale-cluster.lock
need_cluster() {
    CL="$TOP_SRCDIR/scripts/cluster.sh"
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null || ! command -v nsenter >/dev/null ||
        ! command -v flock >/dev/null; then
        echo "SKIP: network namespaces need root, ip and nsenter (and flock, util-linux)"
        exit 77
    fi
    if [ "${FREESCALE_CLUSTER_LOCKED:-}" != 1 ]; then
        touch "$CLUSTER_LOCK" || { fail "cannot create the lock file $CLUSTER_LOCK"; finish; }
        flock -n "$CLUSTER_LOCK" true ||
            echo "waiting for the cluster: another test holds $CLUSTER_LOCK"
        rm -rf "$T"
        trap - EXIT
        FREESCALE_CLUSTER_LOCKED=1 TOP_SRCDIR="$TOP_SRCDIR" FREESCALE="$FS" \
            exec flock -o "$CLUSTER_LOCK" sh "$0"
    fi
    if ip netns list 2>/dev/null | grep -q '^fs-\(sw\|node[0-9]*\)\b'; then
        fail "a cluster is up that no test holds (brought up by hand, or left by a killed test): $(ip netns list | grep '^fs-' | cut -d' ' -f1 | tr '\n' ' ')- scripts/cluster.sh status shows it, scripts/cluster.sh down takes it down"
        finish
    fi
    pass "the cluster is this test's (lock $CLUSTER_LOCK)"
    if ! ip netns add "fs-probe-$$" 2>/dev/null; then
        echo "SKIP: this machine refuses network namespaces"
        exit 77
    fi
    ip netns del "fs-probe-$$"
    export FREESCALE_CLUSTER_DIR="$T/cluster" MPIRUN
    trap '"$CL" down >/dev/null 2>&1; rm -rf "$T"' EXIT
    "$CL" up "$1" > "$T/up.log" 2>&1 || { cat "$T/up.log"; fail "cluster.sh up $1"; finish; }
    pass "cluster.sh up $1: $(grep '^node' "$T/up.log" | tr '\n' ';')"
}
