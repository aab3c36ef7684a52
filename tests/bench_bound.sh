#!/bin/sh
# bench_bound: bench/bound.py (doc/overlap.md, "The bound") against the
# same arithmetic done here by hand on metrics whose every field is known:
# 2 nodes, one rank each; node 0 sent 1000 bytes of ids, 60000 of rows and
# 50000 of gradients to the other node, node 1 1000, 40000 and 50000; the
# dense all-reduce 2000 bytes; forward 20 ms, backward 30 ms, a step of
# 100 ms (10 samples at 100 samples/s) of which 40 exposed (host work 10
# ms); 2 negatives (chunk 0 a quarter of the rows); links of 8mbit (10^6
# bytes/s, 1514 bytes on the wire per 1448 of payload). Per mode the
# bound; the dense ring with 2 ranks per node; the first progress line
# left out; refusals of a run with one progress line and of a bad rate.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import json, argparse' 2>/dev/null || { echo "SKIP: no python3"; exit 77; }
B="$TOP_SRCDIR/bench/bound.py"
metrics() { # MODE OUT: the params line, a start-up line (left out), one interval
    cat > "$2" <<JSON
{"event":"params","params":{"train.negatives":"2","train.loss":"softmax","train.batch_size":"10","parallel.overlap":"$1"}}
{"event":"train","step":5,"samples_per_s":1,"exposed_comm_ms":999,"forward_ms":999,"backward_ms":999,"dense_bytes":1,"xsent_ids.0":1,"xsent_rows.0":1,"xsent_grads.0":1,"xsent_ids.1":1,"xsent_rows.1":1,"xsent_grads.1":1}
{"event":"train","step":10,"samples_per_s":100,"exposed_comm_ms":40,"forward_ms":20,"backward_ms":30,"collision":0.2,"dense_bytes":2000,"xsent_ids.0":1000,"xsent_rows.0":60000,"xsent_grads.0":50000,"xsent_ids.1":1000,"xsent_rows.1":40000,"xsent_grads.1":50000}
JSON
}
# the busiest link and direction per kind (node 0 receives the rows its
# 50000 bytes of gradients answer, the gradients for its 60000 bytes of
# rows, 1200 bytes of ids): ids 1200, rows 60000, gradients 60000 bytes;
# ids + gradients + dense together 63200 (node 0 inbound); f = 1514/1448 us
# a byte at 10^6 bytes/s. By hand, ms:
#   none         (1200 + 60000 + 60000 + 2000) f / 1000
#   prioritized  15000 f + max(0, 45000 f - 20) + max(0, 63200 f - 30)   (f in ms a kB)
#   prefetch     max(0, 1.2 f - 20) + max(0, 60 f - 30) + max(0, 60 f - 10 - max(0, 30 - 60 f)) + 2 f
for m in none prioritized prefetch; do
    metrics $m "$T/$m.jsonl"
    out=$("$PY" "$B" --rate 8mbit "$T/$m.jsonl" 2>&1)
    echo "$out"
    set -- $out
    if [ $# = 17 ] && awk -v m=$m -v e="$2" -v o="$3" -v b="$4" -v i="$8" -v r0="$9" -v r1="${10}" \
            -v pf="${11}" -v g="${12}" -v d="${13}" -v F="${15}" -v Bw="${16}" -v H="${17}" '
        function pos(x) { return x > 0 ? x : 0 }
        function near(a, c) { return (a - c)^2 < 0.05^2 }
        BEGIN { f = 1514 / 1448
            ok = near(e, 40) && near(o, 40) && near(i, 1.2 * f) && near(r0, 15 * f) && near(r1, 45 * f)
            ok = ok && near(g, 60 * f) && near(d, 2 * f) && F == 20 && Bw == 30 && near(H, 10)
            if (m == "none") want = 123.2 * f
            if (m == "prioritized") want = 15 * f + pos(45 * f - 20) + pos(63.2 * f - 30)
            if (m == "prefetch") {
                want = pos(1.2 * f - 20) + pos(60 * f - 30) + pos(60 * f - 10 - pos(30 - 60 * f)) + 2 * f
                ok = ok && near(pf, 48 * f) }
            else ok = ok && pf == 0
            exit !(ok && near(b, want)) }'; then
        pass "$m: bound $4 ms as computed by hand"
    else
        fail "$m: $out"
    fi
done
# two ranks per node: P = 4, the ring's 2 (P - 1) / P of 2000 bytes per rank, two ranks
set -- $("$PY" "$B" --rate 8mbit --ranks-per-node 2 "$T/none.jsonl")
awk -v d="${13}" 'BEGIN { exit !((d - 6 * 1514 / 1448)^2 < 0.05^2) }' &&
    pass "2 ranks per node: the dense all-reduce 6000 bytes on the link (${13} ms)" ||
    fail "2 ranks per node: dense ${13}"
# the compute from other runs: their forward, backward and busy time
sed 's/"forward_ms":20,/"forward_ms":25,/' "$T/none.jsonl" > "$T/c.jsonl"
set -- $("$PY" "$B" --rate 8mbit --compute "$T/c.jsonl" "$T/prioritized.jsonl")
[ "${15} ${17}" = "25.0 5.0" ] && pass "--compute: forward 25, host 5 from the other run" ||
    fail "--compute: $*"
# the time inside MPI of the forward and the backward is not compute
sed 's/"forward_ms":20,/"forward_ms":26,"forward_mpi_ms":6,"backward_mpi_ms":4,/' "$T/none.jsonl" > "$T/w.jsonl"
set -- $("$PY" "$B" --rate 8mbit "$T/w.jsonl")
[ "${15} ${16} ${17}" = "20.0 26.0 14.0" ] &&
    pass "forward_mpi_ms, backward_mpi_ms left out of the compute: ${15} ${16} ${17}" ||
    fail "the phases' MPI time: $*"
head -n 2 "$T/none.jsonl" > "$T/short.jsonl"
expect_error "short.jsonl: 1 progress line(s)" "$PY" "$B" --rate 8mbit "$T/short.jsonl"
expect_error "rate '3furlong'" "$PY" "$B" --rate 3furlong "$T/none.jsonl"
sed 's/,"xsent_[a-z]*\.[0-9]":[0-9]*//g' "$T/none.jsonl" > "$T/old.jsonl"
expect_error "the metrics hold 0 node(s)" "$PY" "$B" --rate 8mbit "$T/old.jsonl"
finish
