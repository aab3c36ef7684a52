#!/bin/sh
# ckpt: writing and reading a checkpoint of a large item table (64 values
# per row with Adam: 64 weights, 128 moments and a step count, 776 bytes a
# row) on 1, 2 and 4 ranks, by the gathered path (every row through rank
# 0, which writes alone: output.checkpoint_write = gathered) and the
# collective one (every rank writes its share through MPI-IO, the default),
# at each table size given.
#
#   bench/ckpt.sh [ROWS ...]        (default: 2500000 10000000 rows)
#
# Environment: RANKS (default "1 2 4"), REPEAT (default 3: the runs are
# interleaved, gathered and collective in turn, and the medians printed),
# TMPDIR (where the checkpoints go: 2 x 776 bytes x ROWS free, and memory
# for the table, 776 bytes x ROWS over all ranks).
#
# Each run trains 2 steps with a checkpoint after each (the first makes
# every row resident; the second, timed, is pure I/O); after the collective
# write a second run resumes from it (there is one reader: every rank
# verifies its share of the file, then reads its share and sends the rows
# to their shards). Printed per (rows, P, path):
# seconds, GB/s (file bytes / seconds) and the peak resident memory of
# rank 0 and of the largest other rank during the write and during the
# read (VmHWM after resetting it), beside each rank's own shard (776 bytes
# x ROWS / P). Never asserted on time; on a shared machine the figures move
# from run to run: read the medians.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "ckpt: $FS not built"; exit 1; }
SIZES=${*:-2500000 10000000}
RANKS=${RANKS:-1 2 4}
REPEAT=${REPEAT:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-ckpt.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1
CONF="model.dim=64 model.layers=1 model.heads=1 embedding.optimizer=adam train.batch_size=32
    train.negatives=16 train.final_eval=off train.log_every=1 data.max_seq_len=32"

# fields "SECONDS GB/S PEAK0 PEAKO" of a cost "X GB in S s (R GB/s); peak memory rank 0 A MiB[, others up to B MiB]"
fields() {
    sed -n "s/^$1.*(\(read \)\{0,1\}[0-9.]* GB in \([0-9.]*\) s (\([0-9.]*\) GB\/s); peak memory rank 0 \([0-9]*\) MiB\(, others up to \([0-9]*\) MiB\)\{0,1\}).*/\2 \3 \4 \6/p" "$2" |
        tail -n 1 | awk '{ print $1, $2, $3, ($4 == "" ? "-" : $4) }'
}

echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo);" \
    "checkpoints in ${TMPDIR:-/tmp} ($(df -h --output=fstype "$W" | tail -n 1 | tr -d ' '));" \
    "$REPEAT runs each, medians"
: > "$W/results"
for N in $SIZES; do
    "$FS" data gen --users 256 --items "$N" --length uniform:5,20 --seed 5 -o "$W/d.h5" \
        >/dev/null || { echo "ckpt: data gen failed"; exit 1; }
    for rep in $(seq "$REPEAT"); do
        for P in $RANKS; do
            for mode in gathered collective; do
                rm -rf "$W/ck"
                mpirun -np "$P" "$FS" train "$TOP/input/tiny.in" data.path="$W/d.h5" $CONF \
                    train.max_steps=2 train.checkpoint_every=1 output.keep_checkpoints=1 \
                    output.checkpoint_dir="$W/ck" output.checkpoint_write="$mode" \
                    > "$W/w.log" 2>&1 ||
                    { echo "ckpt: write run failed (N=$N P=$P $mode):"; tail -n 5 "$W/w.log"; exit 1; }
                read="- - - -" # one reader: after the collective write only
                if [ "$mode" = collective ]; then
                    mpirun -np "$P" "$FS" train "$TOP/input/tiny.in" data.path="$W/d.h5" $CONF \
                        train.max_steps=2 train.resume="$W/ck/ckpt-2.h5" > "$W/r.log" 2>&1 ||
                        { echo "ckpt: read run failed (N=$N P=$P):"; tail -n 5 "$W/r.log"; exit 1; }
                    read=$(fields "resumed from" "$W/r.log")
                fi
                echo "$N $P $mode $(fields "checkpoint .*ckpt-2.h5" "$W/w.log") $read" >> "$W/results"
            done
        done
    done
    rm -rf "$W/ck" "$W/d.h5"
done
# median of each column over the runs of (rows, P, path)
awk '
function med(s,   n, v, i, j, t) {
    n = split(s, v, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j] + 0 < v[j - 1] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return v[int((n + 1) / 2)]
}
{ k = $1 " " $2 " " $3; if (!(k in seen)) { order[++nk] = k; seen[k] = 1 }
  for (c = 4; c <= 11; c++) col[k, c] = col[k, c] " " $c }
END {
    printf "%10s %2s %-10s | %8s %6s %9s %9s | %8s %6s %9s %9s | %9s\n", "rows", "P", "path",
        "write s", "GB/s", "rank0 MiB", "other MiB", "read s", "GB/s", "rank0 MiB", "other MiB",
        "shard MiB"
    for (i = 1; i <= nk; i++) {
        split(order[i], f, " ")
        printf "%10d %2d %-10s |", f[1], f[2], f[3]
        for (c = 4; c <= 11; c++) {
            if (c == 8)
                printf " |"
            printf (c == 5 || c == 9) ? " %6s" : (c == 4 || c == 8) ? " %8s" : " %9s", med(col[order[i], c])
        }
        printf " | %9.0f\n", (f[1] + 1) * 776 / f[2] / 1048576
    }
}' "$W/results"
