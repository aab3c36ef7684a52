# tests/slurm_lib.sh: a private single-node Slurm for the Slurm tests, from
# Debian's packages (munge, slurmctld, slurmd, slurm-client). Source it
# after lib.sh. slurm_start writes a minimal slurm.conf (this host as
# controller and as the one compute node "fsnode", MpiDefault=pmix,
# select/cons_tres, proctrack/pgid, no cgroups, no systemd, no accounting
# database, free TCP ports; a partition "urgent" preempts the default
# "debug" with PreemptMode=REQUEUE; requeued jobs may start again after 6 s,
# AuthInfo cred_expire=5, instead of 121 s) and starts munged, slurmctld and slurmd in the
# foreground as background jobs of this shell, with every state, spool, log
# and socket file under $T/slurm. Every daemon is stopped by its PID on exit
# (trap), also when the test fails or is interrupted.
#
#   slurm_skip_unless_installed   exit 77 when the packages are missing
#   slurm_start                   start the daemons; exports SLURM_CONF
#
# With SLURM_NODES=N (inside node 1 of a scripts/cluster.sh cluster of N
# nodes, FREESCALE_CLUSTER_DIR set: tests/cluster_slurm.sh) the compute nodes
# are the cluster's nodes node1..nodeN at their addresses instead: the
# controller and node1's slurmd run here (node 1's network), nodeI's slurmd
# inside node I (scripts/cluster.sh run I), each with its own spool, PID
# and log file (%n); every node offers 2 GPUs (GRES gpu, device files that
# stand for them; a task's CUDA_VISIBLE_DEVICES names the ones it got, the
# fake device is what it uses).
#   slurm_submit ARGS...          sbatch --parsable ARGS; prints the job id
#   slurm_wait JOBID              wait until the job (every array task) left
#                                 the queue; its final state(s) in $T/state
#   slurm_until JOBID CMD...      wait until CMD succeeds while the job lives
#
# No wait here has a wall-time limit that a slow, loaded machine could
# reach with a healthy job: waits on a job end when it is done, or when
# nothing of it (its state, the test's files) has changed for SLURM_HANG
# seconds (600; a healthy job writes its log and metrics every second or
# so); the daemons and commands get 300 s, a hang guard around what takes
# well under a second.
#   slurm_state JOBID             the job's state now (empty when unknown)
#   slurm_stop                    stop the daemons (called by the trap)

SLURM_PIDS= SLURMD_PID= SLURMCTLD_PID= MUNGED_PID=
SD="$T/slurm"

slurm_skip_unless_installed() {
    for p in munged slurmctld slurmd sbatch squeue scontrol scancel srun; do
        if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
            echo "SKIP: Slurm is not installed ($p missing; Debian: apt-get install munge slurmctld slurmd slurm-client)"
            exit 77
        fi
    done
}

# a TCP port nobody listens on, from the kernel (bind to port 0)
_free_port() {
    "${PY_ANY:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# _wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds (at
# most SECONDS of polling; loaded, the loop takes longer)
_wait_for() {
    _n=$(($1 * 5)); shift
    while [ "$_n" -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.2; _n=$((_n - 1))
    done
    return 1
}

# _stop_pid PID NAME: SIGTERM, up to 15 s, then SIGKILL
_stop_pid() {
    kill -TERM "$1" 2>/dev/null || return 0
    _n=60
    while [ "$_n" -gt 0 ] && kill -0 "$1" 2>/dev/null; do
        sleep 0.25; _n=$((_n - 1))
    done
    if kill -0 "$1" 2>/dev/null; then
        echo "$2 (pid $1) did not stop after 15 s: killing it"
        kill -KILL "$1" 2>/dev/null
    fi
    wait "$1" 2>/dev/null
}

# the slurmstepd processes of this instance: they listen on unix sockets in
# our spool directory (found through /proc/net/unix; no ss needed)
_stepd_pids() {
    inodes=$(awk -v d="$SD/spool/" 'index($8, d) == 1 { print $7 }' /proc/net/unix 2>/dev/null)
    [ -n "$inodes" ] || return 0
    for fd in /proc/[0-9]*/fd/*; do
        l=$(readlink "$fd" 2>/dev/null) || continue
        case $l in socket:*) ;; *) continue ;; esac
        for i in $inodes; do
            [ "$l" = "socket:[$i]" ] && { p=${fd#/proc/}; echo "${p%%/*}"; }
        done
    done | sort -u
}

# _descendants PID...: every descendant of the given processes
_descendants() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v roots="$*" '
        { s = $0; sub(/.*\) /, "", s); split(s, f, " "); par[$1] = f[2] }
        END {
            n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1
            do { more = 0
                 for (p in par) if (!(p in keep) && (par[p] in keep)) { keep[p] = 1; more = 1; print p }
            } while (more)
        }'
}

slurm_stop() {
    [ -n "$SLURM_PIDS" ] || return 0
    # the jobs first, so that slurmd leaves no task behind; then the
    # daemons in the reverse order of their start (munged last: the others
    # talk through it while they shut down)
    if [ -n "$SLURMD_PID" ] && [ -n "$SLURMCTLD_PID" ]; then
        timeout 10 scancel --quiet --user="$(id -un)" >/dev/null 2>&1
        _n=40
        while [ "$_n" -gt 0 ] && [ -n "$(timeout 5 squeue -h -o %i 2>/dev/null)" ]; do
            sleep 0.25; _n=$((_n - 1))
        done
    fi
    stepds=$(_stepd_pids)
    [ -n "$stepds" ] && stepds="$(_descendants $stepds) $stepds"
    for pid in $SLURMD_PID; do _stop_pid "$pid" slurmd; done
    [ -n "$SLURMCTLD_PID" ] && _stop_pid "$SLURMCTLD_PID" slurmctld
    # a step daemon left behind (a job that could not finish) cannot report
    # to anyone any more and would wait forever
    for pid in $stepds; do
        if kill -0 "$pid" 2>/dev/null; then
            echo "step process $pid left behind: killing it"
            kill -KILL "$pid" 2>/dev/null
        fi
    done
    [ -n "$MUNGED_PID" ] && _stop_pid "$MUNGED_PID" munged
    SLURM_PIDS= SLURMD_PID= SLURMCTLD_PID= MUNGED_PID=
}

_slurm_cleanup() {
    _rc=$?
    slurm_stop
    if [ "$_rc" -ne 0 ] && [ "$_rc" -ne 77 ] && [ -d "$SD" ]; then
        for f in slurmctld.log slurmd.log slurmd.node1.log slurmd.node2.log munged.log; do
            [ -f "$SD/$f" ] && { echo "--- tail of $f"; tail -n 30 "$SD/$f"; }
        done
    fi
    rm -rf "$T"
    exit "$_rc"
}
trap _slurm_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

_slurm_fail_start() {
    echo "FAIL: could not start Slurm: $*"
    exit 1
}

slurm_start() {
    mkdir -p "$SD/state" "$SD/spool" "$SD/tmp" || _slurm_fail_start "mkdir $SD"
    chmod 700 "$SD"
    host=$(hostname -s) ctl_addr=127.0.0.1 nodes=${SLURM_NODES:-}
    [ -z "$nodes" ] || ctl_addr=$(_cluster_addr 1)
    PY_ANY=python3
    command -v python3 >/dev/null 2>&1 || PY_ANY=/usr/bin/python3
    p1=$(_free_port) && p2=$(_free_port) || _slurm_fail_start "no free port"
    while [ "$p2" = "$p1" ]; do p2=$(_free_port); done
    first_id=$(( (p1 % 60000) * 1000 + 1 ))

    # munge: a fresh key, our own socket
    dd if=/dev/urandom of="$SD/munge.key" bs=1024 count=1 2>/dev/null &&
        chmod 600 "$SD/munge.key" || _slurm_fail_start "munge key"
    munged --foreground --force --key-file="$SD/munge.key" --socket="$SD/munge.sock" \
        --pid-file="$SD/munged.pid" --log-file="$SD/munged.log" \
        --seed-file="$SD/munged.seed" --num-threads=2 >"$SD/munged.out" 2>&1 &
    MUNGED_PID=$!
    SLURM_PIDS="$MUNGED_PID"
    _wait_for 300 test -S "$SD/munge.sock" || _slurm_fail_start "munged did not create its socket"

    cat >"$SD/slurm.conf" <<EOF
# written by tests/slurm_lib.sh
ClusterName=fstest
SlurmctldHost=$host($ctl_addr)
SlurmctldPort=$p1
SlurmdPort=$p2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SD/munge.sock,cred_expire=5
MpiDefault=pmix
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
StateSaveLocation=$SD/state
SlurmdSpoolDir=$SD/spool$(_per_node /%n)
TmpFS=$SD/tmp$(_per_node /%n)
SlurmctldPidFile=$SD/slurmctld.pid
SlurmdPidFile=$SD/slurmd$(_per_node .%n).pid
SlurmctldLogFile=$SD/slurmctld.log
SlurmdLogFile=$SD/slurmd$(_per_node .%n).log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$SD/jobcomp.txt
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
# job ids distinct from those of another instance on this host (tests run in
# parallel): Open MPI names its shared-memory segments after the PMIx
# namespace, slurm.pmix.JOBID.STEP, and two jobs 1.0 would share them
FirstJobId=$first_id
KillWait=2
SchedulerParameters=sched_interval=1
InactiveLimit=0
SlurmdTimeout=60
# the commands' RPCs wait this long for a loaded controller (default 10 s)
MessageTimeout=60
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
$(_node_lines "$host")
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=10
EOF
    if [ -n "$nodes" ]; then
        # Slurm drops a GPU without a device file: two character devices
        # (/dev/null's numbers) stand for them
        mkdir -p "$SD/dev" && mknod "$SD/dev/gpu0" c 1 3 && mknod "$SD/dev/gpu1" c 1 3 &&
            printf "AutoDetect=off\nNodeName=node[1-$nodes] Name=gpu File=$SD/dev/gpu[0-1]\n" \
                > "$SD/gres.conf" || _slurm_fail_start "gres.conf and its device files"
    fi
    SLURM_CONF="$SD/slurm.conf"
    export SLURM_CONF

    slurmctld -D -c -f "$SLURM_CONF" >"$SD/slurmctld.out" 2>&1 &
    SLURMCTLD_PID=$!
    if [ -z "$nodes" ]; then
        slurmd -D -N fsnode -f "$SLURM_CONF" >"$SD/slurmd.out" 2>&1 &
        SLURMD_PID=$!
    else
        _i=1
        while [ "$_i" -le "$nodes" ]; do
            mkdir -p "$SD/spool/node$_i" "$SD/tmp/node$_i" || _slurm_fail_start "mkdir spool, tmp"
            "$TOP_SRCDIR/scripts/cluster.sh" run "$_i" slurmd -D -f "$SLURM_CONF" \
                >"$SD/slurmd.node$_i.out" 2>&1 &
            SLURMD_PID="$SLURMD_PID $!"
            _i=$((_i + 1))
        done
    fi
    SLURM_PIDS="$MUNGED_PID $SLURMCTLD_PID $SLURMD_PID"
    _wait_for ${SLURM_START_WAIT:-300} _node_ready || _slurm_fail_start "nodes not idle after ${SLURM_START_WAIT:-300} s: $(sinfo -h -N -o '%N %T' 2>&1)"
    echo "Slurm up: controller $ctl_addr port $p1, slurmd port $p2, daemons $SLURM_PIDS"
}

# every node idle (sinfo lists one line per node and partition)
_node_ready() {
    _st=$(sinfo -h -N -o '%T' 2>/dev/null) && [ -n "$_st" ] && ! echo "$_st" | grep -qv '^idle$'
}

# the cluster's address of node I (scripts/cluster.sh: 198.18.0.(10 + I))
_cluster_addr() { echo "198.18.0.$((10 + $1))"; }
# _per_node SUFFIX: SUFFIX in the multi-node mode (per-node paths), else nothing
_per_node() { [ -z "${SLURM_NODES:-}" ] || echo "$1"; }
# the NodeName lines: this host as fsnode, or the cluster's nodes with GPUs
_node_lines() {
    if [ -z "${SLURM_NODES:-}" ]; then
        echo "NodeName=fsnode NodeHostname=$1 NodeAddr=127.0.0.1 CPUs=8 RealMemory=4000 State=UNKNOWN"
        return
    fi
    echo "GresTypes=gpu"
    _i=1
    while [ "$_i" -le "$SLURM_NODES" ]; do
        echo "NodeName=node$_i NodeHostname=node$_i NodeAddr=$(_cluster_addr "$_i") CPUs=8 RealMemory=4000 Gres=gpu:2 State=UNKNOWN"
        _i=$((_i + 1))
    done
}

slurm_submit() {
    timeout 300 sbatch --parsable "$@" | cut -d';' -f1
}

slurm_state() {
    timeout 300 scontrol -o show job "$1" 2>/dev/null |
        sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# true while some task of the job is not finished (pending, running,
# requeued, completing, ...), and when the controller did not answer (a
# loaded machine; asked again later: MinJobAge keeps every job known)
_job_active() {
    st=$(timeout 300 scontrol -o show job "$1" 2>/dev/null) || return 0
    st=$(echo "$st" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    [ -n "$st" ] || return 1
    echo "$st" | grep -qvE '^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)$'
}

_job_gone() { ! _job_active "$1"; }

# _progress JOBID: what changes while a job makes progress: its state and
# the names, sizes and times of the test's files (the daemons' own files
# under $SD left out)
_progress() {
    { slurm_state "$1"; find "$T" -path "$SD" -prune -o -type f -printf '%p %s %T@\n'; } | cksum
}

# slurm_until JOBID CMD...: poll CMD every 0.2 s until it succeeds (0); 1
# when the job left the queue with CMD still failing, or when nothing of
# the job changed for SLURM_HANG seconds (a hang; said on stdout)
slurm_until() {
    _job=$1; shift
    _mark= _since=$(date +%s) _i=0
    while ! "$@"; do
        _i=$((_i + 1))
        if [ $((_i % 10)) = 0 ]; then # every 2 s or so: the job's state
            _job_active "$_job" || { "$@"; return; }
            _m=$(_progress "$_job")
            if [ "$_m" != "$_mark" ]; then
                _mark=$_m _since=$(date +%s)
            elif [ $(( $(date +%s) - _since )) -ge "${SLURM_HANG:-600}" ]; then
                echo "job $_job: nothing changed for ${SLURM_HANG:-600} s: $(slurm_state "$_job")"
                return 1
            fi
        fi
        sleep 0.2
    done
}

slurm_wait() {
    if slurm_until "$1" _job_gone "$1"; then
        slurm_state "$1" >"$T/state"
        return 0
    fi
    timeout 300 scontrol show job "$1" 2>&1 | head -n 40
    timeout 300 scancel "$1" 2>/dev/null
    return 1
}

# slurm_test_setup: what both Slurm tests start with: skip without Slurm,
# start it, export the jobs' environment (sbatch exports ours: Open MPI as
# root in CI), set SB (the scripts) and IN (input/tiny.in), enter $T and
# make tiny.h5 there.
slurm_test_setup() {
    slurm_skip_unless_installed
    slurm_start || exit 1
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
    export FREESCALE="$FS"
    SB="$TOP_SRCDIR/scripts/slurm"
    cd "$T" || exit 1
    tiny_data
}
