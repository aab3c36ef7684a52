#!/bin/sh
# compress: the wire codecs of the embedding exchanges (doc/compression.md)
# against fp32 in the same run, over TCP loopback (OMPI_MCA_btl=self,tcp:
# the slow-link case) at 2 and 4 ranks, with a vocabulary where the
# exchanges matter: 10^7 items, d = 64, 4096 users of 20..80 events (Zipf
# 0.8), HSTU (1 layer, 2 heads), 64 sampled negatives per position, batch
# 64, no dropout. Every codec is used for both rows and gradients; k8 and
# k16 are subspace tables (embedding.subspace_k = 8, 16) on an fp32 wire.
#
#   bench/compress.sh [STEPS] [RANKS]     (default 15 steps, ranks "2 4")
#   COMPRESS_CODECS="fp32 int8 k8" bench/compress.sh   a subset (fp32 first)
#
# Per (ranks, codec) it prints medians over the progress intervals (every
# 5 steps; the first interval is dropped): the bytes per step sent to other
# ranks, rows + gradients summed over ranks (the counters of the progress
# line), their ratio to fp32's, the exposed communication per step (step
# time - busy compute time), and the step time and its ratio to fp32's.
# Times on an oversubscribed machine are noisy; bytes are exact.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "compress: $FS not built"; exit 1; }
STEPS=${1:-15}
RANKS=${2:-2 4}
CODECS=${COMPRESS_CODECS:-fp32 bf16 fp16 fp8 int8 k8 k16}
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-compress.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,tcp OPENBLAS_NUM_THREADS=1

"$FS" data gen --users 4096 --items 10000000 --length uniform:20,80 --zipf 0.8 --seed 5 \
    -o "$W/big.h5" >/dev/null || exit 1
cat > "$W/c.in" <<IN
[data]
path = $W/big.h5
max_seq_len = 64
[model]
type = hstu
dim = 64
layers = 1
heads = 2
dropout = 0
[train]
batch_size = 64
negatives = 64
epochs = 100
log_every = 5
final_eval = off
[embedding]
optimizer = adagrad
IN
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)"
echo "data: 4096 users, 1e7 items, d = 64, batch 64, $STEPS steps per run; MPI over TCP loopback"

field() { sed -n "s/.*\"event\":\"train\".*\"$2\":\([^,}]*\).*/\1/p" "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else print v[int((NR + 1) / 2)] }'; }
stat() { field "$1" "$2" | tail -n +2 | median; }
for np in $RANKS; do
    echo
    echo "$np ranks"
    printf '%-6s %14s %14s %8s %12s %9s %8s\n' codec "rows B/step" "grads B/step" "vs fp32" \
        "exposed ms" "step ms" "vs fp32"
    b32= s32=
    for cd in $CODECS; do
        f="$W/$np-$cd.jsonl"
        case $cd in
            k*) flags="embedding.subspace_k=${cd#k}" ;;
            *) flags="parallel.rows_codec=$cd parallel.grads_codec=$cd" ;;
        esac
        # shellcheck disable=SC2086
        mpirun -np "$np" "$FS" train "$W/c.in" $flags \
            train.max_steps="$STEPS" output.metrics="$f" > "$W/log" 2>&1 ||
            { echo "compress: $cd on $np ranks failed:"; tail -n 20 "$W/log"; exit 1; }
        r=$(stat "$f" rows_bytes) g=$(stat "$f" grads_bytes) e=$(stat "$f" exposed_comm_ms)
        s=$(stat "$f" samples_per_s)
        [ -z "$b32" ] && b32=$(awk -v r="$r" -v g="$g" 'BEGIN { print r + g }') && s32=$s
        awk -v c=$cd -v r="$r" -v g="$g" -v b="$b32" -v e="$e" -v s="$s" -v sb="$s32" 'BEGIN {
            printf "%-6s %14.0f %14.0f %8.3f %12.1f %9.1f %8.2f\n", c, r, g, (r + g) / b, e,
                64000 / s, sb / s }'
    done
done
