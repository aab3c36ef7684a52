# bench/seed_stats.sh: the spread over seeds that the quality benchmarks
# print (quality_rank.sh, quality_planted.sh), sourced.
# seed_stat FILE COLUMN WHAT: over the rows of FILE (one a seed,
# whitespace-separated), COLUMN's median (the middle value; the mean of
# the two middle ones), min, max or std (population), printed "%.4f".
seed_stat() { awk -v c="$2" '{ print $c }' "$1" | sort -g | awk -v what="$3" '
    { v[NR] = $1; s += $1; q += $1 * $1 }
    END { if (what == "median") r = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          else if (what == "min") r = v[1]; else if (what == "max") r = v[NR]
          else { m = s / NR; r = q / NR - m * m; r = r > 0 ? sqrt(r) : 0 }
          printf "%.4f", r }'; }
