# scripts/slurm/common.sh: what train.sbatch and sweep.sbatch share, sourced
# by them (bash). fs_train RUN_DIR FILE.in [overrides] runs one training in
# the job's allocation and makes it preemption-safe:
#
#   - RUN_DIR gets params.in (the effective parameters), metrics.jsonl,
#     checkpoints/, log (freescale's output, appended over restarts) and
#     job.txt (one line per start: job id, restart count, nodes, tasks);
#   - freescale runs under 'srun --mpi=$FS_MPI' (default pmix), one task
#     per GPU as the job asked, with train.resume=auto: a requeued job
#     continues from the newest complete checkpoint in RUN_DIR/checkpoints;
#   - USR1 and TERM sent to the batch shell (sbatch --signal=B:USR1@N,
#     scancel --batch --signal=USR1, preemption) are forwarded to the step:
#     freescale finishes its step, writes a checkpoint and exits 75; a job
#     still RUNNING is then requeued (scontrol requeue); one that Slurm is
#     ending (preempted, timed out, cancelled) is left to Slurm (preemption
#     with PreemptMode=REQUEUE requeues it, and it resumes).
#
# Environment: FREESCALE (the program; default: the freescale built next to
# these scripts, else the one on PATH), FS_MPI (srun --mpi; default pmix),
# FS_SRUN_ARGS (more srun options), FS_NO_REQUEUE=1 (checkpoint and stop,
# without requeueing).

FS_PREEMPT_EXIT=75 # src/train/preempt.h PREEMPT_EXIT_CODE

# fs_log MESSAGE: to Slurm's output, and to RUN/script.log once the run
# directory is known (FS_SCRIPT_LOG), which outlives requeues whatever
# Slurm does with its output file
fs_log() {
    _line="[$(date '+%F %T')] freescale job ${SLURM_JOB_ID:-?}: $*"
    echo "$_line"
    [ -n "${FS_SCRIPT_LOG:-}" ] && echo "$_line" >> "$FS_SCRIPT_LOG"
    return 0
}
fs_die() { fs_log "error: $*" >&2; exit 1; }

# fs_binary SCRIPTS_DIR: the freescale program to run
fs_binary() {
    if [ -n "${FREESCALE:-}" ]; then
        echo "$FREESCALE"
    elif [ -x "$1/../../freescale" ]; then
        (cd "$1/../.." && echo "$PWD/freescale")
    elif command -v freescale >/dev/null 2>&1; then
        command -v freescale
    else
        fs_die "no freescale program: set FREESCALE=/path/to/freescale"
    fi
}

# fs_train FS RUN_DIR FILE.in [section.key=value ...]
fs_train() {
    local fs=$1 run=$2 params=$3
    shift 3
    [ -f "$params" ] || fs_die "no parameter file '$params'"
    mkdir -p "$run/checkpoints" || fs_die "cannot create $run"
    run=$(cd "$run" && pwd)

    local -a over=(
        "output.metrics=$run/metrics.jsonl"
        "output.checkpoint_dir=$run/checkpoints"
        "train.resume=auto"
    )
    # the trace, once freescale has output.trace (checked, not assumed)
    if "$fs" params "$params" "output.trace=$run/trace.json" >/dev/null 2>&1; then
        over+=("output.trace=$run/trace.json")
    fi
    over+=("$@") # the user's overrides come last and win

    # the effective parameters (this also refuses bad parameters before srun)
    if ! "$fs" params "$params" "${over[@]}" >"$run/params.in.tmp" 2>"$run/params.err"; then
        cat "$run/params.err" >&2
        fs_die "bad parameters (see above)"
    fi
    mv "$run/params.in.tmp" "$run/params.in"
    rm -f "$run/params.err"

    echo "job=$SLURM_JOB_ID restart=${SLURM_RESTART_COUNT:-0} nodes=${SLURM_JOB_NODELIST:-?}" \
        "tasks=${SLURM_NTASKS:-?} start=$(date '+%F %T')" >>"$run/job.txt"
    FS_SCRIPT_LOG="$run/script.log"
    fs_log "run directory $run (restart ${SLURM_RESTART_COUNT:-0})"
    fs_log "srun --mpi=${FS_MPI:-pmix} $fs train $params ${over[*]}"

    # srun in the background so that the shell can take signals while it
    # waits; srun forwards USR1 and TERM to every task
    local srun_pid rc r
    # shellcheck disable=SC2086
    srun --mpi="${FS_MPI:-pmix}" ${FS_SRUN_ARGS:-} "$fs" train "$params" "${over[@]}" \
        >>"$run/log" 2>&1 &
    srun_pid=$!
    FS_GOT_SIGNAL=
    FS_INTERRUPTED=0
    trap 'FS_GOT_SIGNAL=USR1; FS_INTERRUPTED=1; fs_log "got USR1: asking for a checkpoint"; kill -USR1 '"$srun_pid"' 2>/dev/null' USR1
    trap 'FS_GOT_SIGNAL=TERM; FS_INTERRUPTED=1; fs_log "got TERM: asking for a checkpoint"; kill -TERM '"$srun_pid"' 2>/dev/null' TERM
    rc=
    while :; do
        FS_INTERRUPTED=0
        wait "$srun_pid"
        r=$?
        # a wait cut short by a trapped signal returns 128 + the signal:
        # srun is still there (or its status not yet collected), wait again
        if [ "$FS_INTERRUPTED" = 1 ] && [ "$r" -gt 128 ]; then
            continue
        fi
        # 127: the status was already collected by the previous wait
        [ "$r" = 127 ] && [ -n "$rc" ] || rc=$r
        break
    done
    trap - USR1 TERM
    tail -n 3 "$run/log" 2>/dev/null

    if [ "$rc" = "$FS_PREEMPT_EXIT" ]; then
        fs_log "checkpointed after ${FS_GOT_SIGNAL:-a signal}: $(ls "$run/checkpoints" | tail -n 1)"
        local state
        state=$(scontrol -o show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
        if [ -n "${FS_NO_REQUEUE:-}" ]; then
            fs_log "FS_NO_REQUEUE set: not requeued; to continue: sbatch with FS_RUN_DIR=$run"
        elif [ "$state" != RUNNING ]; then
            # Slurm itself is ending the job (preemption, which requeues it
            # with PreemptMode=REQUEUE; a time limit; scancel)
            fs_log "job state $state: Slurm is ending the job, not requeued here;" \
                "if it does not come back, continue with sbatch and FS_RUN_DIR=$run"
        elif scontrol requeue "$SLURM_JOB_ID"; then
            fs_log "requeued; it resumes from the checkpoint"
        else
            fs_log "scontrol requeue failed; to continue: sbatch with FS_RUN_DIR=$run"
        fi
        return "$FS_PREEMPT_EXIT"
    fi
    if [ "$rc" = 0 ]; then
        fs_log "done: $run/metrics.jsonl"
    else
        fs_log "freescale failed with exit code $rc; see $run/log"
    fi
    return "$rc"
}
