#!/bin/sh
# cli_plan_mem: 'freescale plan --memory' and '--samples' (tools/plan_mem.h):
#   - the predicted workspace and item-table shard per rank equal what the
#     trainer measures on the fake device (embedding.placement = auto states
#     both at start-up, model_reserve_cold's buffers as the device's free
#     memory shrank), for retrieval and for ranking with interleaved action
#     tokens, at 1 and 2 ranks;
#   - --tables: the shards of each table at each rank count, against the
#     formula computed here (ceil(rows / G) + 1 rows of (dim + state) floats);
#     parallel.embedding_group fixes G;
#   - --samples: steps = ceil(N / (P x batch)), hours = steps x the step time;
#   - bad options refused by name.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
SET="data.path=$T/tiny.h5 model.layers=3 model.dim=64 data.max_seq_len=40 train.batch_size=24"

# fake-device MiB (workspace, tables) of a 1-step run and plan's, for NP ranks
check_ws() { # NAME NP OVERRIDES...
    name=$1 np=$2
    shift 2
    if ! FREESCALE_FAKE_GPUS=fake0,fake1 "$MPIRUN" -np "$np" "$FS" train "$IN" $SET device.type=fake embedding.placement=auto \
        train.max_steps=1 train.final_eval=off "$@" >"$T/run.out" 2>"$T/run.err"; then
        fail "$name: the fake-device run failed: $(tail -c 400 "$T/run.err")"
        return
    fi
    meas=$(sed -n 's/.*state \([0-9.]*\) MiB.*workspace \([0-9.]*\) MiB.*/\2 \1/p' \
        "$T/run.out" "$T/run.err" | head -n 1)
    if ! "$FS" plan "$IN" $SET "$@" --batch-per-rank 24 --ranks "$np" --memory \
        >"$T/plan.out" 2>"$T/plan.err"; then
        fail "$name: plan failed: $(cat "$T/plan.err")"
        return
    fi
    pred=$(awk '/^memory per rank \(MiB/ { on = 1; next } on && $1 ~ /^[0-9]+$/ { print $4, $2; exit }' \
        "$T/plan.out")
    if [ -z "$meas" ] || [ -z "$pred" ]; then
        fail "$name: no figures (measured '$meas', predicted '$pred'): $(head -c 300 "$T/run.out")"
    elif awk -v m="$meas" -v p="$pred" 'BEGIN { split(m, a, " "); split(p, b, " ")
            exit !(a[1] > 1 && (a[1] - b[1]) ^ 2 < 0.011 ^ 2) }'; then
        pass "$name at $np rank(s): workspace measured/predicted (MiB) $meas / $pred"
    else
        fail "$name at $np rank(s): workspace/tables measured $meas, predicted $pred"
    fi
}
check_ws retrieval 1
check_ws retrieval 2
# the item table alone (retrieval: no feature or label tables beside it)
tabm=$(echo "$meas" | cut -d' ' -f2) tabp=$(echo "$pred" | cut -d' ' -f2)
awk -v m="$tabm" -v p="$tabp" 'BEGIN { exit !((m - p) ^ 2 < 0.011 ^ 2) }' &&
    pass "item table's shard at 2 ranks: measured $tabm MiB, predicted $tabp" ||
    fail "item table's shard at 2 ranks: measured $tabm MiB, predicted $tabp"
"$FS" data gen --users 64 --items 200 --length uniform:5,40 --timestamps --labels planted \
    -o "$T/pl.h5" >/dev/null 2>"$T/gen.err" || fail "data gen --labels planted: $(cat "$T/gen.err")"
SET="$SET data.path=$T/pl.h5"
check_ws "ranking, interleaved actions" 2 train.task=ranking train.tasks=c:binary:click \
    model.actions=interleave

# --- --tables: the shards per rank count, adagrad (one state float a row) -----------
expect_ok "$FS" plan "$IN" $SET --batch-per-rank 8 --ranks 2,8 --memory \
    --tables a:1e6:128,b:5000,c:3e5:dyn
awk '/^memory per rank \(MiB/ { on = 1; u = 1; next } /^memory per rank \(GiB/ { on = 1; u = 1024; next }
    on && $1 ~ /^[0-9]+$/ { print $1, $2 * u }' "$T/out" > "$T/tab" # MiB
# c (dyn): slots x (row + 32) + index (power of two >= 2 slots) x 16
awk 'function shard(rows, dim, G, dyn,   s, ix) { s = int((rows + G - 1) / G) + 1
        if (!dyn) return s * (dim + 1) * 4
        for (ix = 16; ix < 2 * s; ix *= 2);
        return s * ((dim + 1) * 4 + 32) + ix * 16 }
    { G = $1; want = (shard(1e6, 128, G, 0) + shard(5000, 64, G, 0) + shard(3e5, 64, G, 1)) / 2^20
      if ((want - $2) ^ 2 > 0.0011 ^ 2) { print "ranks " G ": " $2 " MiB, want " want; bad = 1 } }
    END { exit bad || NR != 2 }' "$T/tab" > "$T/tab.bad" &&
    pass "--tables: shards at 2 and 8 ranks as the formula ($(tr '\n' ';' < "$T/tab"))" ||
    fail "--tables: $(cat "$T/tab.bad") (table: $(tr '\n' ';' < "$T/tab"))"
expect_ok "$FS" plan "$IN" $SET parallel.embedding_group=2 --batch-per-rank 8 --ranks 2,8 \
    --memory --tables a:1e6:128
awk '/^memory per rank/ { on = 1; next } on && $1 ~ /^[0-9]+$/ { print $2 }' "$T/out" | sort -u |
    wc -l | grep -qx 1 && pass "parallel.embedding_group = 2: the same shard at 2 and 8 ranks" ||
    fail "parallel.embedding_group = 2: shards differ across rank counts: $(cat "$T/out")"

# --- --samples: steps and hours from the network model's step time -------------------
mkdir -p "$T/ex"
if "$MPIRUN" -np 2 "$FS" train "$IN" data.path="$T/tiny.h5" train.max_steps=4 train.log_every=2 \
    train.final_eval=off output.metrics="$T/ex.jsonl" >"$T/ex.out" 2>&1; then
    expect_ok "$FS" plan "$IN" data.path="$T/tiny.h5" --batch-per-rank 8 --ranks 8,16 \
        --net 100gbit,2us --gflops 1000 --exchange "$T/ex.jsonl" --exchange-ranks 2 \
        --samples 1e6
    awk '/^ *ranks .*step none\/prio\/prefetch/ { net = 1; next }
        net && $1 ~ /^[0-9]+$/ { step[$1] = $12 } /^time to 1e\+06 samples/ { t = 1; net = 0; next }
        t && $1 ~ /^[0-9]+$/ { n++; want = int((1e6 + $1 * 8 - 1) / ($1 * 8))
            h = want * step[$1] / 3.6e6
            if ($2 != want || ($4 - h) ^ 2 > (0.0006 + 1e-3 * h) ^ 2) bad = 1 }
        END { exit bad || n != 2 }' "$T/out" &&
        pass "--samples 1e6: ceil(N / (P x 8)) steps x prioritized's step time" ||
        fail "--samples: $(tail -n 5 "$T/out")"
else
    fail "the exchange run failed: $(tail -c 300 "$T/ex.out")"
fi

# --- refusals ---------------------------------------------------------------------
expect_error "--tables belongs to --memory" "$FS" plan "$IN" $SET --batch-per-rank 8 --tables a:10
expect_error "entry 'a:x'" "$FS" plan "$IN" $SET --batch-per-rank 8 --memory --tables a:x
expect_error "'dyn2' in entry 'a:5:dyn2'" "$FS" plan "$IN" $SET --batch-per-rank 8 --memory \
    --tables a:5:dyn2
expect_error "--samples needs the network model" "$FS" plan "$IN" $SET --batch-per-rank 8 \
    --samples 100
expect_error "model.type is sasrec" "$FS" plan "$IN" $SET model.type=sasrec --batch-per-rank 8 \
    --memory
finish
