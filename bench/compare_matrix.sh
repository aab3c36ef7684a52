# compare_matrix: bench/compare.sh REV --matrix (sourced by compare.sh,
# which has built both trees, written $W/a.h5 and $W/b.h5 and defined
# run_one). Short interleaved A/B runs of every configuration of
# matrix_configs; see compare.sh's head for what it prints.

MRUNS=${MATRIX_RUNS:-3}
MSTEPS=${MATRIX_STEPS:-16}

# name|model|data (ml: ML-1M's shape; feat: the same with features)|overrides
# (sasrec-fake pins host tables: embedding.placement = auto chooses device
# tables on the fake device since issue 51, hstu-fake-devtab times those)
matrix_configs() {
    cat <<'CONF'
hstu-softmax|hstu|ml|
hstu-full|hstu|ml|train.loss=full
hstu-bce|hstu|ml|train.loss=bce
hstu-in_batch|hstu|ml|train.negatives_from=in_batch
hstu-mixed|hstu|ml|train.negatives_from=mixed
hstu-overlap-none|hstu|ml|parallel.overlap=none
hstu-prefetch|hstu|ml|parallel.overlap=prefetch
hstu-split_long|hstu|ml|parallel.split_long=auto parallel.split_fraction=0.02
hstu-codecs-bf16|hstu|ml|parallel.rows_codec=bf16 parallel.grads_codec=bf16
hstu-emb-group|hstu|ml|parallel.embedding_group=1
hstu-features|hstu|feat|features.item=genres,year features.user=age,occ features.event=act
hstu-ranking|hstu|feat|train.task=ranking train.tasks=like:binary:act>=3 data.split=last:10% features.item=genres,year
hstu-fake-devtab|hstu|ml|device.type=fake device.share=on embedding.placement=device
hstu-fake-rank|hstu|feat|device.type=fake device.share=on train.task=ranking train.tasks=like:binary:act>=3 data.split=last:10% features.item=genres,year model.bias=on model.recency=10 model.factors=4
hstu-fake-dyn|hstu|ml|device.type=fake device.share=on embedding.dynamic=on embedding.admit=2 embedding.evict=lru embedding.capacity=3000
hstu-bf16|hstu|ml|device.precision=bf16
sasrec-bce|sasrec|ml|
sasrec-softmax|sasrec|ml|train.loss=softmax
sasrec-full|sasrec|ml|train.loss=full train.temperature=1
sasrec-split_long|sasrec|ml|train.loss=softmax parallel.split_long=auto parallel.split_fraction=0.02
sasrec-fake|sasrec|ml|device.type=fake device.share=on embedding.placement=host
CONF
}

gen_feat() { # FS OUT: ML-1M's shape with item, user and event features
    "$1" data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps --seed 3 \
        --item-feature genres:19:3 --item-feature year:80 --user-feature age:8 \
        --user-feature occ:21 --event-feature act:6 -o "$2" >/dev/null 2>&1
}
gen_feat "$A_FS" "$W/a-feat.h5" || die "data gen (features) of this tree failed"
gen_feat "$B_FS" "$W/b-feat.h5" || echo "compare: $REV's data gen writes no features: its feature configurations cannot run"

echo "compare: matrix: $NP ranks, $MSTEPS steps per run (timed: the steps after the first progress interval), $MRUNS pairs after a warm-up per configuration, $(nproc) CPUs, $(date -u +%F)"
[ $# -gt 0 ] && echo "compare: overrides for every configuration: $*"
GLOBAL=("$@")
: >"$W/matrix.list"
matrix_status=0
t_start=$(date +%s)
while IFS='|' read -r name model data over; do
    [ -n "$name" ] || continue
    if [ -n "${MATRIX_ONLY:-}" ] && ! echo ",$MATRIX_ONLY," | grep -q ",$name,"; then
        continue
    fi
    da=$W/a.h5 db=$W/b.h5
    [ "$data" = feat ] && da=$W/a-feat.h5 db=$W/b-feat.h5
    # shellcheck disable=SC2206 # the overrides are words
    args=(train.batch_size=128 $over "${GLOBAL[@]}")
    if ! run_one a "$model" "$name-warm" "$da" "$MSTEPS" "${args[@]}"; then
        echo "compare: $name: A FAILED: $(grep -m1 -i error "$W/a-$model-$name-warm.log" | cut -c1-200)"
        echo "$name|$model|afail" >>"$W/matrix.list"
        matrix_status=1
    elif [ ! -f "$db" ] || ! run_one b "$model" "$name-warm" "$db" "$MSTEPS" "${args[@]}"; then
        why="its data gen writes no features"
        [ -f "$db" ] && why=$({ grep -m1 "^freescale: error" "$W/b-$model-$name-warm.log" ||
            grep -m1 -iE "error|unknown" "$W/b-$model-$name-warm.log"; } |
            sed 's/^freescale: error \[rank [0-9]*\]: //' | cut -c1-120)
        echo "compare: $name: B cannot run it: $why"
        echo "$name|$model|bfail|$why" >>"$W/matrix.list"
    else
        ok=1
        for i in $(seq 1 "$MRUNS"); do
            run_one a "$model" "$name-$i" "$da" "$MSTEPS" "${args[@]}" || ok=0
            run_one b "$model" "$name-$i" "$db" "$MSTEPS" "${args[@]}" || ok=0
        done
        if [ $ok = 1 ]; then
            echo "compare: $name: done ($(($(date +%s) - t_start)) s so far)"
            echo "$name|$model|ok" >>"$W/matrix.list"
        else
            echo "compare: $name: a run failed"
            echo "$name|$model|afail" >>"$W/matrix.list"
            matrix_status=1
        fi
    fi
done < <(matrix_configs)
echo "compare: matrix took $(($(date +%s) - t_start)) s"

"$PY" - "$W" "$MRUNS" <<'PYEOF' || matrix_status=1
import json, statistics, sys
w, runs = sys.argv[1], int(sys.argv[2])
B = 128  # train.batch_size of every configuration

def events(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") == "train":
                out.append(e)
    return out

def timed(path):
    """seconds per sample over the progress intervals after the first"""
    ev = events(path)[1:]
    return sum(1.0 / e["samples_per_s"] for e in ev if e.get("samples_per_s", 0) > 0), len(ev)

med = statistics.median
status, rows, spreads = 0, [], []
print(f"\n{'configuration':<20} {'A ms/step':>9} {'B ms/step':>9} {'A/B step (min-max)':>22} "
      f"{'A/B wall':>8}  losses")
for line in open(f"{w}/matrix.list"):
    name, model, st, *why = line.rstrip("\n").split("|")
    if st == "afail":
        print(f"{name:<20} A FAILED")
        status = 1
        continue
    if st == "bfail":
        print(f"{name:<20} {'-':>9} {'-':>9} {'REV cannot run it':>22} {'':>8}  ({why[0] if why else ''})")
        continue
    ta, tb, r, wr = [], [], [], []
    for i in range(1, runs + 1):
        sa, na = timed(f"{w}/a-{model}-{name}-{i}.jsonl")
        sb, nb = timed(f"{w}/b-{model}-{name}-{i}.jsonl")
        if na == 0 or nb == 0 or na != nb:
            continue
        ta.append(1e3 * B * sa / (4 * na))
        tb.append(1e3 * B * sb / (4 * nb))
        r.append(sa / sb)
        wa = float(open(f"{w}/a-{model}-{name}-{i}.wall").read())
        wb = float(open(f"{w}/b-{model}-{name}-{i}.wall").read())
        wr.append(wa / wb)
    la = [[e["step"], e["loss"]] for e in events(f"{w}/a-{model}-{name}-1.jsonl")]
    lb = [[e["step"], e["loss"]] for e in events(f"{w}/b-{model}-{name}-1.jsonl")]
    if la == lb:
        loss = "identical"
    elif [s for s, _ in la] != [s for s, _ in lb]:
        loss = "different steps logged"
        status = 1
    else:
        d = max(abs(x[1] - y[1]) / max(abs(y[1]), 1e-30) for x, y in zip(la, lb))
        loss = f"DIFFER (rel. {d:.2g})"
        status = 1
    if not r:
        print(f"{name:<20} no timed intervals")
        status = 1
        continue
    m = med(r)
    spreads.append((max(r) - min(r)) / 2)
    flag = "  SLOWER" if m > 1.05 else ""
    print(f"{name:<20} {med(ta):9.1f} {med(tb):9.1f} {m:8.3f} ({min(r):.3f}-{max(r):.3f}) "
          f"{med(wr):8.3f}  {loss}{flag}")
if spreads:
    print(f"\nnoise: {runs} pairs per configuration; half the range of a configuration's pair "
          f"ratios, median over configurations {med(spreads):.3f}, largest {max(spreads):.3f}")
sys.exit(status)
PYEOF
exit $matrix_status
