#!/bin/sh
# cli_plan_net: 'freescale plan --net', the network model, against the same
# arithmetic done here by hand on a case whose every input is known: equal
# lengths (no bubble), a cost model of 1000 us per token, a metrics file of
# known bytes and tokens (its first interval left out), one GPU per node
# (every remote row crosses the link). Rows and gradients: half the bytes
# per token x the rank's tokens x (P - 1) / P over the link plus P - 1
# latencies, the ids 8 bytes per row of 4 model.dim; compute = the
# sequences' cost, a third of it the forward, the rest the backward
# (--split: a host share too); none's exposed time is the
# four exchanges' sum; prioritized exposes the input rows' share 1 / (2 +
# negatives) of the rows, and the excess of chunk 1 over the forward and
# of ids + gradients + dense over the backward; prefetch the ids' excess
# over the forward, the gradients' over the backward, that of the rows
# (ahead and late) over the host work and what the gradients left of the
# backward, and the dense; nothing at one rank. With a long
# compute (everything hides) and a short one (every max(0, wire -
# compute) active), --eff, --collision, --split. Then the refusals of incomplete or
# bad options, and the warning on a measured batch other than the planned
# one.
. "$(dirname "$0")/lib.sh"
IN="$TOP_SRCDIR/input/tiny.in"
# train lines: step 5 (dropped: the start-up), step 10: 5 steps of 5000 +
# 5000 bytes and 1000 tokens: 50 bytes per token at 2 ranks, 100 when
# every row is remote; 8 sequences per rank and step (32 samples/s x 2.5 s
# over 5 steps and 2 ranks)
cat > "$T/m.jsonl" <<EOF
{"event":"train","step":5,"tokens":999,"rows_bytes":3000,"grads_bytes":3000,"samples_per_s":1,"interval_s":1}
{"event":"eval","step":5,"loss":1}
{"event":"train","step":10,"tokens":1000,"rows_bytes":5000,"grads_bytes":5000,"samples_per_s":32,"interval_s":2.5}
EOF
SET="data.split=hstu data.max_seq_len=64 train.negatives=2 parallel.cost_model=0,1000,0"
NET="--lengths fixed:21 --batch-per-rank 8 --net 1MB,1ms --gpus-per-node 1 --exchange $T/m.jsonl --exchange-ranks 2"
expect_ok "$FS" plan "$IN" $SET $NET --ranks 1,4
sed -n '/^network model/,$p' "$T/out"
grep -q '100.0 bytes per token' "$T/out" && pass "bytes per token from the metrics: 100" ||
    fail "bytes per token: $(grep '^network' "$T/out")"
row() { awk -v p="$1" '$1 == p && NF == 13' "$T/out"; }
# P = 4: 8 sequences of 19 inputs (21 events, hstu split) = 152 tokens;
# the rows' (and the gradients') wire: 0.5 x 100 x 152 x 3/4 bytes at
# 1 MB/s x E = 5.7 / E ms, the ids' 8 / (4 x 16) of it, each + 3 x 1 ms
# latencies; compute c = 152 x the cost per token (forward F = c SF,
# backward B = c SB, host H = c (1 - SF - SB)); the dense all-reduce d as
# printed (the model's arena, its ring's 6 latencies at least). The
# model, by hand:
#   none         ids + rows + grads + d
#   prioritized  w / 4 + 3 + max(0, 3 w / 4 + 3 - F) + max(0, ids + grads + d - B)
#   prefetch     max(0, ids - F) + max(0, grads - B)
#                + max(0, (1 - k) w + 3 + [k w + 3] - H - max(0, B - grads)) + d
# (w = the rows' wire, k = --collision; [late] only when k > 0)
check() { # WHAT COST_PER_TOKEN E K SF SB: the row of P = 4 in $T/out against the model
    set -- "$1" "$2" "$3" "$4" "$5" "$6" $(row 4)
    if [ $# = 19 ] && awk -v u="$2" -v e="$3" -v k="$4" -v sf="$5" -v sb="$6" -v c="$8" \
            -v b="$9" -v i="${10}" -v r="${11}" -v g="${12}" -v d="${13}" -v en="${14}" \
            -v ep="${15}" -v ef="${16}" -v sn="${17}" -v sp="${18}" -v sf2="${19}" '
        function pos(x) { return x > 0 ? x : 0 }
        function near(a, b) { return (a - b)^2 < 1e-5 }
        BEGIN {
            w = 5.7 / e; F = 152 * u / 1000 * sf; B = 152 * u / 1000 * sb
            H = 152 * u / 1000 * (1 - sf - sb)
            ok = near(c, 152 * u / 1000) && b == 0 && near(i, w / 8 + 3) && near(r, w + 3)
            ok = ok && near(g, w + 3) && d > 6
            ok = ok && near(en, i + r + g + d)
            ok = ok && near(ep, w / 4 + 3 + pos(3 * w / 4 + 3 - F) + pos(i + g + d - B))
            late = k > 0 ? k * w + 3 : 0
            rest = (1 - k) * w + 3 + late - H - pos(B - g)
            ok = ok && near(ef, pos(i - F) + pos(g - B) + pos(rest) + d)
            exit !(ok && near(sn, c + en) && near(sp, c + ep) && near(sf2, c + ef)) }'; then
        pass "4 ranks, $1: exposed none ${14}, prioritized ${15}, prefetch ${16} as computed by hand"
    else
        shift 6
        fail "4 ranks, $1: $*"
    fi
}
# a long compute: everything but the input rows hides behind it (prefetch:
# the dense all-reduce only)
check "1000 us a token" 1000 1 0 0.33333333 0.66666667
set -- $(row 4)
awk -v ep="$9" -v ef="${10}" -v d="$7" 'BEGIN { exit !((ep - (5.7 / 4 + 3))^2 < 1e-5 && ef == d) }' &&
    pass "4 ranks, long compute: prioritized = the input rows (4.425 ms), prefetch = dense" ||
    fail "4 ranks, long compute: $(row 4)"
set -- $(row 1)
[ $# = 13 ] && [ "$4 $5 $6 $7 $8" = "0.000 0.000 0.000 0.000 0.000" ] &&
    pass "1 rank: no communication" || fail "1 rank: $(row 1)"
# a short compute (15.2 ms): most phases exceed their compute; half the link's
# rate usable, a quarter of the rows late, the forward 0.4 of the compute,
# the backward 0.4, the host 0.2 (the ids of prefetch hide, none of
# prioritized's phases does)
expect_ok "$FS" plan "$IN" $SET parallel.cost_model=0,100,0 $NET --ranks 4 --eff 0.5 \
    --collision 0.25 --split 0.4,0.4
check "100 us a token, eff 0.5, collision 0.25, split 0.4,0.4" 100 0.5 0.25 0.4 0.4
# a host share of 0.6: part of prefetch's rows hides behind it (9.1 ms of
# their 11.7)
expect_ok "$FS" plan "$IN" $SET parallel.cost_model=0,100,0 $NET --ranks 4 --collision 0.25 \
    --split 0.2,0.2
check "100 us a token, collision 0.25, split 0.2,0.2" 100 1 0.25 0.2 0.2
# hiding: with --hide 0 every mode exposes everything
expect_ok "$FS" plan "$IN" $SET $NET --ranks 4 --hide 0
set -- $(row 4)
[ $# = 13 ] && [ "$8" = "$9" ] && [ "$9" = "${10}" ] && pass "--hide 0: every mode exposes $8 ms" ||
    fail "--hide 0: $(row 4)"
# the ids' share from the metrics' bytes to other nodes, when they are there
sed 's/"interval_s":2.5}/"interval_s":2.5,"xsent_ids.0":100,"xsent_ids.1":150,"xsent_rows.0":500,"xsent_rows.1":500}/' \
    "$T/m.jsonl" > "$T/mx.jsonl"
expect_ok "$FS" plan "$IN" $SET --lengths fixed:21 --batch-per-rank 8 --net 1MB,1ms \
    --gpus-per-node 1 --exchange "$T/mx.jsonl" --exchange-ranks 2 --ranks 4
set -- $(row 4)
grep -q 'ids 0.2500 of the rows' "$T/out" && awk -v i="$4" 'BEGIN { exit !((i - (5.7 / 4 + 3))^2 < 1e-5) }' &&
    pass "ids: 250 / 1000 of the rows' bytes from xsent_ids and xsent_rows" ||
    fail "ids from the metrics: $(grep '^network' "$T/out"); $(row 4)"
# a planned batch other than the measured one
expect_ok "$FS" plan "$IN" $SET $NET --ranks 4 --batch-per-rank 32
grep -q 'ran 8.0 sequences per rank and step, --batch-per-rank is 32' "$T/err" &&
    pass "warns on a batch other than the measured one" || fail "no warning: $(cat "$T/err")"

expect_error "needs --exchange FILE and --exchange-ranks" "$FS" plan "$IN" $SET \
    --lengths fixed:21 --batch-per-rank 8 --net 1MB
expect_error "give --net BW[,LAT] too" "$FS" plan "$IN" $SET --lengths fixed:21 \
    --batch-per-rank 8 --exchange "$T/m.jsonl"
expect_error "unit 'furlong' of '3furlong' unknown" "$FS" plan "$IN" $SET $NET --net 3furlong
expect_error "--eff" "$FS" plan "$IN" $SET $NET --eff 0
expect_error "--split: '0.7,0.5': expected two shares" "$FS" plan "$IN" $SET $NET --split 0.7,0.5
expect_error "needs --gflops R" "$FS" plan "$IN" data.split=hstu --lengths fixed:21 \
    --batch-per-rank 8 --net 1MB --exchange "$T/m.jsonl" --exchange-ranks 2
echo '{"event":"train","step":3,"tokens":10}' > "$T/bad.jsonl"
expect_error "bad.jsonl:1: a train line without 'rows_bytes'" "$FS" plan "$IN" $SET \
    --lengths fixed:21 --batch-per-rank 8 --net 1MB --exchange "$T/bad.jsonl" --exchange-ranks 2
echo 'not json' > "$T/bad.jsonl"
expect_error "bad.jsonl:1: not a JSON object" "$FS" plan "$IN" $SET --lengths fixed:21 \
    --batch-per-rank 8 --net 1MB --exchange "$T/bad.jsonl" --exchange-ranks 2
finish
