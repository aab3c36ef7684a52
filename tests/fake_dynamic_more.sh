#!/bin/sh
# fake_dynamic_more: dynamic tables in the fake device's memory
# (embedding.placement = device) where tests/fake_dynamic.sh does not go:
#   - a stream over window files (retrieval, 12h windows of day files) at
#     P = 4 ranks sharing the device: every window's losses and evaluation
#     equal the CPU's host tables at tolerance 0, and so do the training
#     steps' losses;
#   - score (a ranking model with model.bias: the pairs' predictions) and
#     export (the item table, user vectors, dense parameters) from a
#     checkpoint with the table in device memory write what they write
#     with the table in host memory on the CPU, byte for byte (score) and
#     dataset for dataset (export, h5diff), for a dynamic and a dense
#     item table.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
DEV="device.type=fake device.share=on embedding.placement=device parallel.transport=mpi"
CPU="device.type=cpu parallel.transport=mpi"
run() { # NAME NP ARGS...: metrics in $T/NAME.jsonl
    rn=$1 rp=$2; shift 2
    "$MPIRUN" -np "$rp" "$FS" train "$IN" "output.metrics=$T/$rn.jsonl" "$@" >"$T/$rn.out" 2>&1 ||
        fail "$rn: $(tail -n 3 "$T/$rn.out")"
}

# --- a stream over window files at P = 4 ---------------------------------------
"$FS" data gen --stream --days 3 --users 60 --items 100 --new-items-per-day 10 --labels --seed 3 \
    -o "$T/one.h5" --split-days "$T/D" >/dev/null 2>&1 || { fail "data gen --stream"; finish; }
S="data.path=$T/D/day-*.h5 train.schedule=stream data.window=12h train.batch_size=8 train.log_every=1
data.max_seq_len=64 model.layers=1 model.dim=16 embedding.dynamic=on embedding.admit=2
embedding.evict=lru embedding.capacity=120"
run st-cpu 4 $CPU $S
run st-dev 4 $DEV $S
win() { grep '"event":"window"' "$1" | sed 's/"[a-z_]*_s":[^,}]*,*//g; s/"peak_mib[a-z_]*":[^,}]*,*//g; s/"seconds":[^,}]*,*//g; s/"[hd]2[hd]_bytes":[^,}]*,*//g'; }
win "$T/st-cpu.jsonl" > "$T/wa"; win "$T/st-dev.jsonl" > "$T/wb"
[ "$(wc -l < "$T/wa")" -ge 3 ] && grep -q '"eval_events":[1-9]' "$T/wa" && cmp -s "$T/wa" "$T/wb" &&
    pass "stream, P=4: $(wc -l < "$T/wa") windows (losses, evaluations) of device tables = CPU" ||
    fail "stream, P=4: windows differ: $(diff "$T/wa" "$T/wb" | head -n 2 | cut -c 1-300 | tr '\n' ' ')"
same_losses "$T/st-cpu.jsonl" "$T/st-dev.jsonl" "stream, P=4: the steps' losses, device tables vs CPU" 0 0

# --- score and export from a checkpoint, the table in device memory ------------
awk 'BEGIN { srand(5); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 40; u++) { n = 8 + int(rand() * 30)
        for (k = 0; k < n; k++) printf "%d,%d,%.1f,%d\n", u, 1 + int(rand() * rand() * 80),
            0.5 + int(rand() * 10) / 2, 964980000 + 1000 * u + 37 * k } }' > "$T/ratings.csv"
"$FS" data import --format csv "$T/ratings.csv" --event-cols rating:float -o "$T/r.h5" >/dev/null ||
    { fail "data import"; finish; }
R="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
data.split=last:20% model.bias=on model.layers=1 model.dim=16 train.batch_size=10 train.max_steps=6
train.final_eval=off train.checkpoint_every=6"
printf 'user,item\n3,1\n3,13\n12,8\n25,2\n40,3\n7,5\n' > "$T/pairs.csv"
for kind in dyn dense; do
    [ $kind = dyn ] && K="embedding.dynamic=on embedding.admit=2" || K="embedding.dynamic=off"
    run ck-$kind 2 $CPU $R $K "output.checkpoint_dir=$T/ck-$kind"
    ck="$T/ck-$kind/ckpt-6.h5"
    [ -f "$ck" ] || { fail "$kind: no checkpoint: $(ls "$T/ck-$kind" 2>&1 | tr '\n' ' ')"; continue; }
    for on in cpu dev; do
        [ $on = cpu ] && A=$CPU || A=$DEV
        "$MPIRUN" -np 2 "$FS" score "$ck" $A --pairs "$T/pairs.csv" -o "$T/s-$kind-$on.csv" \
            >"$T/s-$kind-$on.out" 2>&1 || fail "score $kind $on: $(tail -n 3 "$T/s-$kind-$on.out")"
        "$MPIRUN" -np 2 "$FS" export "$ck" $A -o "$T/x-$kind-$on.h5" \
            >"$T/x-$kind-$on.out" 2>&1 || fail "export $kind $on: $(tail -n 3 "$T/x-$kind-$on.out")"
    done
    grep -q '^embedding.placement: device' "$T/s-$kind-dev.out" &&
        grep -q '^embedding.placement: device' "$T/x-$kind-dev.out" &&
        pass "$kind: score and export put the table in device memory" ||
        fail "$kind: the table was not in device memory: $(grep -h 'placement' "$T/s-$kind-dev.out" "$T/x-$kind-dev.out" | head -n 2 | tr '\n' ' ')"
    [ "$(wc -l < "$T/s-$kind-cpu.csv")" = 7 ] && cmp -s "$T/s-$kind-cpu.csv" "$T/s-$kind-dev.csv" &&
        pass "$kind: score over a device table = the host table's (6 pairs)" ||
        fail "$kind: score differs: $(diff "$T/s-$kind-cpu.csv" "$T/s-$kind-dev.csv" | head -n 3 | tr '\n' ' ')"
    if command -v h5diff >/dev/null 2>&1; then
        h5diff "$T/x-$kind-cpu.h5" "$T/x-$kind-dev.h5" >"$T/x-$kind.diff" 2>&1 &&
            pass "$kind: export over a device table = the host table's (h5diff)" ||
            fail "$kind: export differs: $(head -n 3 "$T/x-$kind.diff" | tr '\n' ' ')"
    else
        pass "$kind: export not compared (h5diff, of hdf5-tools, is not installed)"
    fi
done
finish
