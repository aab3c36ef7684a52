#!/bin/sh
# cli_plan_net: 'freescale plan --net', the network model, against the same
# arithmetic done here by hand on a case whose every input is known: equal
# lengths (no bubble), a cost model of 1000 us per token, a metrics file of
# known bytes and tokens (its first interval left out), one GPU per node
# (every remote row crosses the link). Rows and gradients: half the bytes
# per token x the rank's tokens x (P - 1) / P over the link plus P - 1
# latencies; compute = the sequences' cost; prioritized hides all but the
# input rows' share 1 / (2 + negatives) when the compute is long enough;
# none's exposed time is the three exchanges' sum; nothing at one rank.
# Then the refusals of incomplete or bad options, and the warning on a
# measured batch other than the planned one.
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
row() { awk -v p="$1" '$1 == p && NF == 12' "$T/out"; }
# P = 4: 8 sequences of 19 inputs (21 events, hstu split) = 152 tokens;
# rows = grads = 0.5 x 100 x 152 x 3/4 / 1e6 s + 3 x 1 ms = 8.7 ms;
# compute 8 x 19 x 1000 us = 152 ms; prioritized: the input rows' share
# 1/4 of 8.7 stays exposed (the rest hides behind the 50.7 ms forward,
# the gradients and dense behind the 101.3 ms backward); prefetch: the
# dense all-reduce only
set -- $(row 4)
if [ $# = 12 ] && awk -v c="$2" -v b="$3" -v r="$4" -v g="$5" -v d="$6" -v en="$7" -v ep="$8" \
        -v ef="$9" -v sn="${10}" 'BEGIN {
        ok = c == 152 && b == 0 && r == 8.7 && g == 8.7 && d > 0
        ok = ok && (en - (r + g + d))^2 < 1e-5 && (ep - r / 4)^2 < 1e-5 && (ef - d)^2 < 1e-5
        exit !(ok && (sn - (c + en))^2 < 1e-5) }'; then
    pass "4 ranks: compute 152, rows = grads 8.7 ms, exposed none = the sum, prioritized = the input rows, prefetch = dense"
else
    fail "4 ranks: $(row 4)"
fi
set -- $(row 1)
[ $# = 12 ] && [ "$4 $5 $6 $7" = "0.000 0.000 0.000 0.000" ] && pass "1 rank: no communication" ||
    fail "1 rank: $(row 1)"
# the input share and hiding: with --hide 0 every mode exposes everything
expect_ok "$FS" plan "$IN" $SET $NET --ranks 4 --hide 0
set -- $(row 4)
[ $# = 12 ] && [ "$7" = "$8" ] && [ "$8" = "$9" ] && pass "--hide 0: every mode exposes $7 ms" ||
    fail "--hide 0: $(row 4)"
# a planned batch other than the measured one
expect_ok "$FS" plan "$IN" $SET $NET --ranks 4 --batch-per-rank 32
grep -q 'ran 8.0 sequences per rank and step, --batch-per-rank is 32' "$T/err" &&
    pass "warns on a batch other than the measured one" || fail "no warning: $(cat "$T/err")"

expect_error "needs --exchange FILE and --exchange-ranks" "$FS" plan "$IN" $SET \
    --lengths fixed:21 --batch-per-rank 8 --net 1MB
expect_error "give --net BW[,LAT] too" "$FS" plan "$IN" $SET --lengths fixed:21 \
    --batch-per-rank 8 --exchange "$T/m.jsonl"
expect_error "unit 'furlong' of '3furlong' unknown" "$FS" plan "$IN" $SET $NET --net 3furlong
expect_error "needs --gflops R" "$FS" plan "$IN" data.split=hstu --lengths fixed:21 \
    --batch-per-rank 8 --net 1MB --exchange "$T/m.jsonl" --exchange-ranks 2
echo '{"event":"train","step":3,"tokens":10}' > "$T/bad.jsonl"
expect_error "bad.jsonl:1: a train line without 'rows_bytes'" "$FS" plan "$IN" $SET \
    --lengths fixed:21 --batch-per-rank 8 --net 1MB --exchange "$T/bad.jsonl" --exchange-ranks 2
echo 'not json' > "$T/bad.jsonl"
expect_error "bad.jsonl:1: not a JSON object" "$FS" plan "$IN" $SET --lengths fixed:21 \
    --batch-per-rank 8 --net 1MB --exchange "$T/bad.jsonl" --exchange-ranks 2
finish
