#!/bin/sh
# stream_quality: streaming training against a frozen model on a synthetic
# drifting stream (doc/quality.md, "Streaming").
#
#   bench/stream_quality.sh [OUTDIR]        (default: a scratch folder, removed)
#   SQ_USERS=4000 SQ_DAYS=20 SQ_NP=2 bench/stream_quality.sh
#
# `data gen --stream --labels`: SQ_DAYS days (default 20) of SQ_USERS users
# (default 4000), 2000 items on day 0 and 100 new ones a day, popularity
# rotated by 10% a day, like labels from the planted model; raw ids, so the
# item table is dynamic (embedding.dynamic = on, ttl:400 eviction). A
# ranking HSTU is trained by train.schedule = stream with one-day windows,
# each evaluated test-then-train:
#   streaming  every window trained, from the first to the last;
#   frozen     the same run stopped after the first half (data.stream_end),
#              resumed with learning rates of 1e-12 (dense and sparse): it
#              still evaluates every later window, but learns nothing more
#              (new items get their initial rows, as a frozen model serving
#              them would).
# Prints the like AUC of every window of the second half for both and the
# online user+item baseline, and how many windows streaming wins; with
# OUTDIR and gnuplot, OUTDIR/windows-like.auc.png (scripts/plot --windows).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "stream_quality: $FS not built"; exit 1; }
MPIRUN=${MPIRUN:-mpirun}
NP=${SQ_NP:-2} USERS=${SQ_USERS:-4000} DAYS=${SQ_DAYS:-20}
HALF=$((DAYS / 2))
if [ -n "${1:-}" ]; then W=$1; mkdir -p "$W"; else
    W=$(mktemp -d "${TMPDIR:-/tmp}/fs-sq.XXXXXX"); trap 'rm -rf "$W"' EXIT; fi
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$FS" data gen --stream --days "$DAYS" --users "$USERS" --items 2000 --new-items-per-day 100 \
    --drift 0.1 --labels --seed 3 -o "$W/s.h5" | tail -n 1
cat > "$W/s.in" <<IN
[data]
path = $W/s.h5
max_seq_len = 50
window = 1d
[model]
type = hstu
dim = 32
layers = 2
heads = 1
dropout = 0.1
actions = sum
head = 64
[train]
task = ranking
tasks = like:binary:like
schedule = stream
batch_size = 32
lr = 1e-3
log_every = 1000
[embedding]
optimizer = adam
lr = 1e-3
dynamic = on
evict = ttl:400
IN
run() { # NAME ARGS...
    n=$1; shift
    "$MPIRUN" -np "$NP" "$FS" train "$W/s.in" output.metrics="$W/$n.jsonl" "$@" > "$W/$n.log" 2>&1 ||
        { echo "stream_quality: $n failed:"; tail -n 5 "$W/$n.log"; exit 1; }
}
t0=$(date +%s)
run streaming output.checkpoint_dir="$W/ck-s"
t1=$(date +%s)
run frozen-a output.checkpoint_dir="$W/ck-f" data.stream_end=+"$HALF"d
run frozen output.checkpoint_dir="$W/ck-f" train.resume=auto train.lr=1e-12 embedding.lr=1e-12
auc() { # FILE: "window auc baseline" per window line
    sed -n 's/.*"event":"window","window":\([0-9]*\),.*"like.auc":\([^,}]*\).*"baseline.like.auc":\([^,}]*\).*/\1 \2 \3/p' "$1"
}
auc "$W/streaming.jsonl" > "$W/s.txt"
auc "$W/frozen.jsonl" > "$W/f.txt"
echo "$NP ranks; streaming run $((t1 - t0)) s; like AUC of the windows after the first $HALF days:"
awk -v half="$HALF" 'NR == FNR { s[$1] = $2; b[$1] = $3; next }
    $1 > half - 1 { f[$1] = $2 }
    END { printf "%7s %10s %10s %10s\n", "window", "streaming", "frozen", "baseline"
          for (k = half; k in s; k++) if (k in f) {
              printf "%7d %10.4f %10.4f %10.4f\n", k, s[k], f[k], b[k]
              if (k > half) { n++; w += s[k] > f[k] } }
          printf "streaming beats frozen in %d of the %d windows after window %d (window %d: the same model)\n",
              w, n, half, half }' "$W/s.txt" "$W/f.txt"
if [ -n "${1:-}" ] && command -v gnuplot >/dev/null 2>&1; then
    "$TOP/scripts/plot" --windows -o "$W" "$W/streaming.jsonl" "$W/frozen.jsonl" | grep 'like.auc'
fi
