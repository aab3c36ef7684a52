#!/bin/sh
# bench_quality: the split and the arithmetic of bench/quality_rank.sh
# (bench/quality_lib.sh) on tiny data whose answers are known by hand:
#   - split_users: the header in both halves, odd user ids in A and even in
#     B, every line in exactly one half in the file's order, the same
#     halves twice; a user id that is not an integer refused naming the
#     line;
#   - choose: the candidate of the best median (not the best mean or
#     maximum), the first of equal medians;
#   - curve_median over curves of unequal lengths, gaps, mmm (median, min,
#     max), num, summary and curve on a metrics file.
. "$(dirname "$0")/lib.sh"
. "$TOP_SRCDIR/bench/seed_stats.sh"
. "$TOP_SRCDIR/bench/quality_lib.sh"

printf 'userId,movieId,rating,timestamp\n1,5,4.0,10\n2,5,3.0,11\n10,7,5.0,12\n1,6,2.5,13\n3,5,1.0,14\n2,8,4.5,15\n7,9,3.5,16\n' \
    > "$T/r.csv"
split_users "$T/r.csv" "$T/a.csv" "$T/b.csv" || fail "split_users failed"
printf 'userId,movieId,rating,timestamp\n1,5,4.0,10\n1,6,2.5,13\n3,5,1.0,14\n7,9,3.5,16\n' > "$T/wa"
printf 'userId,movieId,rating,timestamp\n2,5,3.0,11\n10,7,5.0,12\n2,8,4.5,15\n' > "$T/wb"
cmp -s "$T/a.csv" "$T/wa" && cmp -s "$T/b.csv" "$T/wb" && pass "split_users: odd users in A, even in B, in order" ||
    fail "split_users: $(cat "$T/a.csv" "$T/b.csv")"
split_users "$T/r.csv" "$T/a2.csv" "$T/b2.csv"
cmp -s "$T/a.csv" "$T/a2.csv" && cmp -s "$T/b.csv" "$T/b2.csv" && pass "split_users: the same halves twice" ||
    fail "split_users: not deterministic"
printf 'userId,movieId\n1,5\nx7,5\n' > "$T/bad.csv"
if split_users "$T/bad.csv" "$T/ba" "$T/bb" 2> "$T/err"; then fail "split_users: took user id x7"
elif grep -q 'bad.csv:3: user id "x7" is not an integer' "$T/err"; then pass "split_users: refused x7 naming the line"
else fail "split_users: message $(cat "$T/err")"; fi

# candidate 1: 0.70 0.90 0.71 (median 0.71, mean 0.77, max 0.90); 2: 0.75 0.76 0.60
# (median 0.75); 3: 0.75 0.74 0.80 (median 0.75, after 2)
printf '1 1 0.70\n2 1 0.75\n3 1 0.75\n1 2 0.90\n2 2 0.76\n3 2 0.74\n1 3 0.71\n2 3 0.60\n3 3 0.80\n' > "$T/rows"
c=$(choose "$T/rows" 3)
[ "$c" = 2 ] && pass "choose: the best median (2)" || fail "choose: $c, not 2"
pick "$T/rows" 1 > "$T/p1"
m=$(mmm "$T/p1" 3)
[ "$m" = "0.7100 (0.7000 .. 0.9000)" ] && pass "pick and mmm: $m" || fail "mmm: $m"

printf '0.1 0.5 0.3\n0.3 0.2\n0.2 0.4 0.1 0.9\n' > "$T/cv"
c=$(curve_median "$T/cv")
[ "$c" = "0.2000 0.4000 0.2000 0.9000" ] && pass "curve_median: $c" || fail "curve_median: $c"

printf '1 0.70 0.90 0.65 0.95 0.75 0.85\n' > "$T/g"
c=$(gaps "$T/g" | awk '{ printf "%.2f %.2f %.2f", $8, $9, $10 }')
[ "$c" = "0.05 -0.05 0.05" ] && pass "gaps: $c" || fail "gaps: $c"

cat > "$T/m.jsonl" <<'JSON'
{"event":"eval","split":"val","epoch":1,"step":20,"like.auc":0.71,"like.ne":0.9}
{"event":"eval","split":"val","epoch":2,"step":40,"like.auc":0.73,"like.ne":0.8}
{"event":"eval","split":"test","epoch":2,"step":40,"like.auc":0.75,"like.ne":0.85}
{"event":"eval","split":"test-baseline-user+item","epoch":2,"step":40,"like.auc":0.7,"like.ne":0.9}
{"event":"summary","epoch":2,"step":40,"best_epoch":2,"like.auc":0.75}
JSON
c="$(num "$T/m.jsonl" test like.auc) $(num "$T/m.jsonl" test-baseline-user+item like.ne) $(summary "$T/m.jsonl" step) $(curve "$T/m.jsonl" like.auc)"
[ "$c" = "0.75 0.9 40 0.71 0.73" ] && pass "num, summary, curve: $c" || fail "num, summary, curve: $c"
{ curve "$T/m.jsonl" like.auc; curve "$T/m.jsonl" like.ne; } > "$T/cv2"
c=$(curve_median "$T/cv2")
[ "$c" = "0.8050 0.7650" ] && pass "curve: a line each, their median $c" || fail "curve's lines: $c"
finish
