# shellcheck shell=sh
# bench/quality_lib.sh: the arithmetic and the split of bench/quality_rank.sh
# (sourced after bench/seed_stats.sh; tests/bench_quality.sh checks them on
# tiny data).
#
# split_users CSV A B: the ratings CSV (a header line, the user id in the
# first column) cut into two halves of users: odd ids to A, even ids to B,
# each with the header; every line in exactly one half, a user's lines all
# in one, in the file's order (deterministic: the same file, the same
# halves). A user id that is not an integer stops it (exit status 1).
split_users() {
    awk -F, -v a="$2" -v b="$3" '
        NR == 1 { print > a; print > b; next }
        $1 !~ /^[0-9]+$/ { printf "%s:%d: user id \"%s\" is not an integer\n", FILENAME, NR, $1 > "/dev/stderr"
                           bad = 1; exit 1 }
        { print > ($1 % 2 ? a : b) }
        END { if (bad) exit 1 }' "$1"
}

# num FILE SPLIT KEY: KEY of the last eval line of SPLIT in the metrics FILE
num() { sed -n "s/.*\"split\":\"$2\".*\"$3\":\([^,}]*\).*/\1/p" "$1" | tail -1; }

# summary FILE KEY: KEY of the run's summary line (step, best_epoch)
summary() { sed -n "s/.*\"event\":\"summary\".*\"$2\":\([^,}]*\).*/\1/p" "$1" | tail -1; }

# curve FILE KEY: KEY of every validation line of the metrics FILE, one line
# (ended by a newline)
curve() { sed -n "s/.*\"split\":\"val\".*\"$2\":\([^,}]*\).*/\1/p" "$1" | tr '\n' ' ' | sed 's/ $//'; echo; }

# curve_median FILE: FILE holds one curve a line (a seed's, blank-separated);
# printed: per position the median over the lines that reach it, "%.4f",
# blank-separated
curve_median() { awk '
    { for (i = 1; i <= NF; i++) v[i, ++n[i]] = $i; if (NF > w) w = NF }
    END { for (i = 1; i <= w; i++) {
              m = n[i]
              for (j = 1; j <= m; j++) s[j] = v[i, j]
              for (j = 2; j <= m; j++) { x = s[j]; for (k = j - 1; k >= 1 && s[k] > x; k--) s[k + 1] = s[k]; s[k + 1] = x }
              r = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
              printf "%s%.4f", (i > 1 ? " " : ""), r }
          printf "\n" }' "$1"; }

# choose ROWS COLUMN: ROWS holds "CANDIDATE SEED value..." lines; printed:
# the candidate whose median of COLUMN (1-based over the line) is the
# highest (the first of equal ones, in the order candidates first appear)
choose() { awk -v c="$2" '
    { if (!($1 in n)) order[++k] = $1; v[$1, ++n[$1]] = $c }
    END { for (q = 1; q <= k; q++) {
              id = order[q]; m = n[id]
              for (j = 1; j <= m; j++) s[j] = v[id, j]
              for (j = 2; j <= m; j++) { x = s[j]; for (i = j - 1; i >= 1 && s[i] > x; i--) s[i + 1] = s[i]; s[i + 1] = x }
              r = m % 2 ? s[(m + 1) / 2] : (s[m / 2] + s[m / 2 + 1]) / 2
              if (q == 1 || r > best) { best = r; pick = id } }
          print pick }' "$1"; }

# gaps FILE: FILE holds "SEED AUC NE BASE_AUC BASE_NE OPT_AUC OPT_NE
# POST_AUC POST_NE" lines (a run's test figures, its user+item baseline's,
# the data's optimum, the optimum of what the history shows); printed:
# each line with AUC - BASE_AUC, AUC - OPT_AUC, NE - OPT_NE, AUC - POST_AUC
# and NE - POST_NE added (columns 10 .. 14)
gaps() { awk '{ print $0, $2 - $4, $2 - $6, $3 - $7, $2 - $8, $3 - $9 }' "$1"; }

# pick ROWS CANDIDATE: the lines of ROWS whose first field is CANDIDATE
pick() { awk -v id="$2" '$1 == id' "$1"; }

# mmm FILE COLUMN: "median (min .. max)" of COLUMN over FILE's lines
# (bench/seed_stats.sh's seed_stat)
mmm() {
    printf '%s (%s .. %s)' "$(seed_stat "$1" "$2" median)" "$(seed_stat "$1" "$2" min)" \
        "$(seed_stat "$1" "$2" max)"
}
