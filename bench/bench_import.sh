#!/bin/sh
# bench_import: time 'freescale data import --format csv' on a synthetic
# ratings.csv shaped like ML-25M (grouped by user, times unordered within a
# user, half-star ratings), against the I/O floor of reading the same file.
#
#   bench/bench_import.sh [ROWS]        default 2.5e7 rows
#   FREESCALE=path/to/freescale         default ./freescale next to bench/
#
# Prints rows, seconds, rows/s, peak RSS (when /usr/bin/time -v exists) and
# the ratio to reading the file (dd) and to 'wc -l FILE'. Temporary files live
# under ${TMPDIR:-/tmp} and are removed.
set -eu
ROWS=${1:-2.5e7}
ROWS=$(awk -v n="$ROWS" 'BEGIN { if (n !~ /^[0-9.]+([eE][0-9]+)?$/ || n + 0 < 1) exit 1;
                                 printf "%d", n + 0 }') || {
    echo "bench_import: ROWS must be a positive number, got '$ROWS'" >&2; exit 2; }
FS=${FREESCALE:-$(cd "$(dirname "$0")/.." && pwd)/freescale}
[ -x "$FS" ] || { echo "bench_import: no program at $FS (build it: make freescale)" >&2; exit 2; }
DIR=$(mktemp -d "${TMPDIR:-/tmp}/fs-bench-import.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
CSV=$DIR/ratings.csv

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# ~154 events per user like ML-25M (25M events, 162k users); items skewed
# over 59k ids; times in [1e9, 1.6e9) in random order within a user.
t=$(now)
awk -v n="$ROWS" 'BEGIN {
    srand(12345);
    print "userId,movieId,rating,timestamp";
    for (i = 0; i < n; i++) {
        u = int(i / 154) + 1;
        r = rand(); item = int(59047 * r * r * r) + 1;
        printf "%d,%d,%.1f,%d\n", u, item, (int(rand() * 10) + 1) / 2, 1000000000 + int(rand() * 6e8);
    }
}' > "$CSV"
echo "generated $ROWS rows, $(du -m "$CSV" | cut -f1) MiB, in $(secs "$t" "$(now)") s"

# (dd, not cat: cat may splice to /dev/null without reading into memory)
t=$(now); dd if="$CSV" of=/dev/null bs=16M 2>/dev/null; cat_s=$(secs "$t" "$(now)")
t=$(now); wc -l "$CSV" > /dev/null; wc_s=$(secs "$t" "$(now)")

OUT=$DIR/out.h5
if [ -x /usr/bin/time ] && /usr/bin/time -v true 2>/dev/null; then
    t=$(now)
    /usr/bin/time -v -o "$DIR/time" "$FS" data import --format csv "$CSV" -o "$OUT" > "$DIR/log"
    imp_s=$(secs "$t" "$(now)")
    rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f MiB", $2 / 1024 }' "$DIR/time")
else
    t=$(now)
    "$FS" data import --format csv "$CSV" -o "$OUT" > "$DIR/log"
    imp_s=$(secs "$t" "$(now)")
    rss="(no /usr/bin/time -v)"
fi
sed 's/^/  | /' "$DIR/log"
awk -v n="$ROWS" -v s="$imp_s" -v c="$cat_s" -v w="$wc_s" -v rss="$rss" -v mb="$(du -m "$CSV" | cut -f1)" 'BEGIN {
    printf "rows       %d\n", n;
    printf "seconds    %.2f (whole process)\n", s;
    printf "rows/s     %.0f\n", n / (s > 0 ? s : 1e-9);
    printf "MiB/s      %.0f\n", mb / (s > 0 ? s : 1e-9);
    printf "peak RSS   %s\n", rss;
    printf "floor      read (dd bs=16M) %.2f s, wc -l %.2f s (file in page cache)\n", c, w;
    printf "ratio      import / read = %.0f, import / wc -l = %.0f\n",
           s / (c > 0 ? c : 0.01), s / (w > 0 ? w : 0.01);
}'
