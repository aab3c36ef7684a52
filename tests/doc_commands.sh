#!/bin/bash
# doc_commands: every command that README and doc/*.md show runs as
# written. tests/doc_extract.awk takes the commands out of the docs (the
# indented ./freescale, mpirun, srun, sbatch, scripts/ and bench/ lines,
# continuations joined); each doc file's commands run in order, each
# command through bash, in a scratch directory of that doc's own (the
# program, input/, scripts/, bench/ and small files in the published
# datasets' layouts that this test generates), so that earlier commands
# make later ones' inputs as they would for a reader. What a command may
# change on its way there is in ONE table (SUBST: data paths to the
# generated files, big sizes to small ones, one epoch); what cannot run
# here is in ONE list (SKIP: each with its reason). A command fails the
# test, naming FILE:LINE, when it exits non-zero or prints an error or a
# refusal, or when a line the doc quotes as its output (right after it,
# in the same block) has no line of the same shape in what it printed
# (the first words, numbers as #). Usage lines with placeholders (FILE.in,
# [options], a|b) are counted, not run. One rule is checked on the text
# alone: the checkpoint directory that an input file names is used by one
# documented run of it only; other runs of that file name their own
# output.checkpoint_dir (or else one run refuses the other's checkpoints).
# DOC_FILES="README doc/x.md" limits the run to those files; DOC_KEEP=1
# keeps the scratch directories and logs (their path is printed).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "$(dirname "$0")/lib.sh"
if [ -n "${DOC_KEEP:-}" ]; then trap - EXIT; echo "scratch directories and logs: $T"; fi
need_mpirun
SRC=$TOP_SRCDIR
BIN=$(cd "$(dirname "$FS")" && pwd)/$(basename "$FS")
cd "$SRC" || exit 1
DOCS=${DOC_FILES:-README $(ls doc/*.md)}

# --- the one table of substitutions (literal text -> replacement), applied
# in order to every command before it runs
SUBST=(
    # ml-latest-small's files -> small files in its layout (fixtures below)
    "../shared/data/ml-latest-small/"   "ml-latest-small/"
    # one epoch (the command's own overrides, after it, still win)
    "train input/mls-hstu.in"           "train input/mls-hstu.in train.epochs=1"
    "train input/mls-rank.in"           "train input/mls-rank.in train.epochs=1"
    "train input/ml1m-hstu.in"          "train input/ml1m-hstu.in train.epochs=1"
    "train input/ml20m-hstu.in"         "train input/ml20m-hstu.in train.epochs=1"
    # 4 steps an epoch on the small ratings.csv (200 users, batch 64): the
    # checkpoint every 100 steps and the one at step 400 become 2 and 4
    "train.checkpoint_every=100"        "train.checkpoint_every=2"
    "ck/ckpt-100.h5"                    "ck/ckpt-2.h5"
    "ck/ckpt-400.h5"                    "ck/ckpt-4.h5"
    # big synthetic sizes -> small ones
    "--users 1e5 --items 1e6"           "--users 300 --items 3000"
    "--days 30 --users 10000 --items 5000" "--days 30 --users 200 --items 300"
    "--users 1500 --tracks 4000"        "--users 150 --tracks 400"
    "--days 30 --users 2000 --tracks 4000 --median-length 300" "--days 4 --users 100 --tracks 300 --median-length 60"
    "--users 20000 --items 26744"       "--users 600 --items 2000"
    "--vocab 1000000 --dim 64 --ids 100000" "--vocab 10000 --dim 64 --ids 1000 --iters 3"
    "--vocab 1e6"                       "--vocab 1e4 --iters 3"
    "--ranks 8,64,256,1024,4096"        "--ranks 8,64"
    "--ranks 256,4096"                  "--ranks 16,64"
    "calibrate input/mls-hstu.in"       "calibrate input/mls-hstu.in --points 3 --reps 1 --min-ms 5"
    "train.batch_size=256 train.max_steps=4" "train.batch_size=32 train.max_steps=2"
    # dlrmv4.md's exchange measured at d 512 for plan (--exchange): at d 64
    # on the small stream (the same rows a token; d 512's layers cost ~60%
    # of this test's time)
    "model.dim=512 model.heads=4"       "model.dim=64 model.heads=4"
    # the yearly streams (quality.md, training.md) over the 23 years: their
    # first 5 windows
    "data.window=365d data.stream_start=1996-01-01" "data.window=365d data.stream_start=1996-01-01 data.stream_end=2001-01-01"
    # score's "the dataset has moved": the same dataset under another name
    "data.path=other.h5"                "data.path=mls-rank.h5"
    # two stream runs' metrics to compare: the doc's stream run, twice
    "a.jsonl b.jsonl"                   "stream.jsonl stream.jsonl"
)

# --- the one list of commands not run here (a glob on the command as the
# doc writes it, then the reason)
SKIP=(
    "scripts/test.sh*"              "builds the tree and runs make check, which runs this test"
    "*sbatch *"                     "needs a Slurm cluster (sweep.sbatch run directly submits itself): tests/slurm_train.sh, slurm_requeue.sh and slurm_stream.sh run these scripts under a local Slurm"
    "srun *"                        "needs a Slurm allocation"
    "scripts/collect * runs/sweep-ARRAYJOBID" "reads the run directories of a Slurm sweep (tests/cli_plot.sh runs scripts/collect)"
    "scripts/cluster.sh *"          "root, network namespaces and minutes: tests/cluster_*.sh run scripts/cluster.sh"
    "*bench/compare.sh *"            "builds another git revision and times both: minutes"
    "*bench/overlap.sh"             "every overlap mode over 40 steps, 2 rounds: minutes"
    "bench/cache.sh"                "52 runs of 300 steps on the fake device: minutes"
    "bench/overlap.sh (2e6 items*"  "a row of a table of figures, not a command"
    "scripts/gpu-rehearse.sh*"      "builds the CUDA bundle and rehearses the GPU run: minutes (doc/gpu.md)"
    "mpirun --map-by ppr:1:numa:PE=8 *" "needs 8 cores per NUMA node"
    "mpirun -np 2 --bind-to none ./freescale train input/ml20m-hstu.in" "trains MovieLens-20M: hours"
    "*output.checkpoint_dir=ck &"   "a run in the background that the doc's next line (kill -USR1 %1) stops: a race with its start; tests/cli_signal.sh sends USR1"
)

# --- fixtures: small files in the layouts of the published datasets
FIX=$T/fixtures
mkdir -p "$FIX/ml-latest-small" "$FIX/ml-1m" "$FIX/ml-20m" "$FIX/ml-100k" "$FIX/KuaiRand-Pure/data"
# ml-latest-small: 200 users, 10-40 ratings each over 500 movies (ids up
# to ~3500), in half stars, 1996-2018
awk 'BEGIN { srand(11); print "userId,movieId,rating,timestamp"
    for (u = 1; u <= 200; u++) { n = 10 + int(rand() * 31); t = 820454400 + int(rand() * 680000000)
        for (k = 0; k < n; k++) { t += 1 + int(rand() * 2000000)
            printf "%d,%d,%.1f,%d\n", u, 1 + 7 * int(500 * rand() ^ 2), 0.5 * (1 + int(rand() * 10)), t } } }' \
    > "$FIX/ml-latest-small/ratings.csv"
awk 'BEGIN { split("Action|Comedy,Drama,Animation|Children|Comedy,(no genres listed)", g, ",")
    print "movieId,title,genres"
    for (m = 0; m < 500; m++) printf "%d,Movie %d (%d),%s\n", 1 + 7 * m, m, 1950 + m % 70, g[1 + m % 4] }' \
    > "$FIX/ml-latest-small/movies.csv"
cp "$FIX/ml-latest-small/ratings.csv" "$FIX/ml-20m/ratings.csv"
# ML-1M: ratings.dat, users.dat, movies.dat
awk -F, 'NR > 1 { printf "%d::%d::%d::%d\n", $1, $2, int($3 + 0.5) < 1 ? 1 : int($3 + 0.5), $4 }' \
    "$FIX/ml-latest-small/ratings.csv" > "$FIX/ml-1m/ratings.dat"
awk 'BEGIN { split("1 18 25 35 45 50 56", a, " ")
    for (u = 1; u <= 200; u++) printf "%d::%s::%s::%d::%05d\n", u, u % 2 ? "M" : "F", a[1 + u % 7], u % 21, 10000 + 97 * u }' \
    > "$FIX/ml-1m/users.dat"
awk -F, 'NR > 1 { printf "%s::%s::%s\n", $1, $2, $3 }' "$FIX/ml-latest-small/movies.csv" > "$FIX/ml-1m/movies.dat"
# ML-100K: u.data (tab), u.user, u.item (19 genre flags)
awk -F, 'NR > 1 { printf "%d\t%d\t%d\t%d\n", $1, $2, int($3 + 0.5) < 1 ? 1 : int($3 + 0.5), $4 }' \
    "$FIX/ml-latest-small/ratings.csv" > "$FIX/ml-100k/u.data"
awk 'BEGIN { for (u = 1; u <= 200; u++) printf "%d|%d|%s|%s|%05d\n", u, 10 + u % 60, u % 3 ? "M" : "F", u % 2 ? "student" : "writer", 90000 + u }' \
    > "$FIX/ml-100k/u.user"
awk 'BEGIN { for (m = 0; m < 500; m++) { printf "%d|Film %d (%d)|01-Jan-%d||http://x", 1 + 7 * m, m, 1950 + m % 40, 1950 + m % 40
    for (g = 0; g < 19; g++) printf "|%d", (g == m % 19) ? 1 : 0; printf "\n" } }' > "$FIX/ml-100k/u.item"
# Amazon: headerless user,item,rating,time with string ids, and 5-core
# reviews as gzipped JSON lines
awk 'BEGIN { srand(5); for (u = 0; u < 150; u++) for (k = 0; k < 8; k++)
    printf "A%04dX,%010d,%d.0,%d\n", u, 13714 + int(80 * rand() ^ 2), 1 + int(rand() * 5), 1387670400 + 86400 * (8 * u + k) }' \
    > "$FIX/ratings_Books.csv"
awk -F, '{ printf "{\"reviewerID\": \"%s\", \"asin\": \"%s\", \"overall\": %s, \"unixReviewTime\": %s, \"summary\": \"ok\"}\n", $1, $2, $3, $4 }' \
    "$FIX/ratings_Books.csv" | gzip -n > "$FIX/reviews_Books_5.json.gz"
# KuaiRand-Pure: the log, user and video files in the published column order
{ echo "user_id,video_id,date,hourmin,time_ms,is_click,is_like,is_follow,is_comment,is_forward,is_hate,long_view,play_time_ms,duration_ms,profile_stay_time,comment_stay_time,is_profile_enter,is_rand,tab"
  awk 'BEGIN { srand(9); for (u = 0; u < 40; u++) for (k = 0; k < 15; k++)
    printf "%d,%d,20220408,%d,%.0f,%d,%d,0,0,0,0,%d,%d,30000,0,0,%d,0,%d\n", u, 100 + int(rand() * 40), 1000 + k,
        1649433600000 + 60000 * (u * 15 + k), rand() < 0.5, rand() < 0.1, rand() < 0.3, int(rand() * 30000), rand() < 0.05, int(rand() * 3) }'
} > "$FIX/KuaiRand-Pure/data/log_standard_4_08_to_4_21_pure.csv"
{ printf 'user_id,user_active_degree,is_lowactive_period,is_live_streamer,is_video_author,follow_user_num,follow_user_num_range,fans_user_num,fans_user_num_range,friend_user_num,friend_user_num_range,register_days,register_days_range'
  for k in $(seq 0 17); do printf ',onehot_feat%d' "$k"; done; echo
  awk 'BEGIN { split("high_active,full_active,middle_active", d, ",")
    for (u = 0; u < 40; u++) { printf "%d,%s,0,0,%d,%d,%s,%d,\"(0,10]\",0,0,%d,31-60", u, d[1 + u % 3], u % 2, u * 3, u < 20 ? "\"(0,10]\"" : "\"(10,50]\"", u, 40 + u
      for (k = 0; k < 18; k++) printf ",%d", (u + k) % 4; printf "\n" } }'
} > "$FIX/KuaiRand-Pure/data/user_features_pure.csv"
{ echo "video_id,author_id,video_type,upload_dt,upload_type,visible_status,video_duration,server_width,server_height,music_id,music_type,tag"
  awk 'BEGIN { for (v = 100; v < 140; v++) printf "%d,%d,%s,2022-03-%02d,%s,public,%d.0,720,1280,%d,%d,\"%d,%d\"\n",
    v, v % 7, v % 5 ? "NORMAL" : "AD", 1 + v % 28, v % 2 ? "ShortImport" : "PictureSet", 10000 + v, v % 9, v % 3, v % 11, (v + 3) % 11 }'
} > "$FIX/KuaiRand-Pure/data/video_features_basic_pure.csv"
# score's pairs (the dataset's own column names) and recommend's users
awk -F, 'NR == 1 { print "userId,movieId" } NR > 1 && NR % 50 == 0 { print $1 "," $2 }' \
    "$FIX/ml-latest-small/ratings.csv" > "$FIX/pairs.csv"
printf '3\n1\n17\n' > "$FIX/some-users.txt"
# doc/gpu.md's users.csv: each user's age
awk 'BEGIN { print "userId,age"; for (u = 1; u <= 200; u++) print u "," 18 + u % 50 }' > "$FIX/users.csv"
# the datasets of input/*.in as README and doc/ranking.md make them (docs
# other than those use them without making them): copied into each
# scratch directory, where a doc's own command may make them again
FSD="$FS"
(cd "$FIX" && "$FSD" data import --format csv ml-latest-small/ratings.csv -o mls.h5 &&
    "$FSD" data import --format movielens ml-latest-small/ratings.csv --items ml-latest-small/movies.csv \
        -o mls-rank.h5 &&
    # Yambda's multi_event table and the tracks' artist and album (doc/importing.md), as CSV
    mkdir -p yambda && "$FSD" data gen --yambda --days 3 --users 60 --tracks 300 \
        --csv yambda/multi_event.csv --items-csv yambda/items.csv) > "$T/fixtures.log" 2>&1 ||
    { echo "FAIL: the fixtures: $(cat "$T/fixtures.log")"; exit 1; }
mkdir -p "$T/made" && mv "$FIX/mls.h5" "$FIX/mls-rank.h5" "$T/made/"

# --- the commands
awk -f "$SRC/tests/doc_extract.awk" $DOCS > "$T/cmds.tsv" || { echo "FAIL: extracting the commands"; exit 1; }
[ -s "$T/cmds.tsv" ] || { echo "FAIL: no command found in $DOCS"; exit 1; }

# shape TEXT: the first three words, every word with a digit as '#'
shape() { printf '%s\n' "$1" | awk '{ s = ""; for (i = 1; i <= NF && i <= 3; i++) { w = $i; if (w ~ /[0-9]/) w = "#"; s = s (i > 1 ? " " : "") w } print s }'; }

# the rule on checkpoint directories: per input file with its own
# output.checkpoint_dir, the distinct documented runs that write into it
for f in input/*.in; do
    dir=$(sed -n 's/^checkpoint_dir *= *\([^ #][^ #]*\).*/\1/p' "$f")
    [ -n "$dir" ] || continue
    awk -F'\t' -v f="$f" '$3 == "c" && index($4, " train " f) && $4 !~ /output\.checkpoint_dir=/ && $4 !~ /&$/ {
        s = substr($4, index($4, " train " f) + length(" train " f)); sub(/ *#.*/, "", s)
        if (!(s in seen)) { seen[s] = $1 ":" $2; n++ } }
        END { if (n > 1) { printf "%d different runs of %s:", n, f; for (s in seen) printf " %s (\"%s\")", seen[s], s; print "" } }' \
        "$T/cmds.tsv" > "$T/rule"
    if [ -s "$T/rule" ]; then
        fail "$(cat "$T/rule") write into its checkpoint directory $dir: one refuses the other's checkpoints; give all but one run its own output.checkpoint_dir"
    else
        pass "only one documented run of $f writes into $dir"
    fi
done

ran=0; skipped=0; usage=0
scratch_for() {   # a doc's scratch directory: the program, input/, scripts/, bench/, fixtures
    S=$T/run/$(echo "$1" | tr '/.' '__')
    mkdir -p "$S"
    ln -s "$BIN" "$S/freescale"
    cp -r "$SRC/input" "$S/input"
    ln -s "$SRC/scripts" "$S/scripts"; ln -s "$SRC/bench" "$S/bench"
    for x in "$FIX"/*; do ln -s "$x" "$S/$(basename "$x")"; done
    cp "$T"/made/*.h5 "$S/"
    # tiny.h5, as input/tiny.in's header makes it (the docs use it after
    # the README made it)
    mk=$(sed -n 's/^# *freescale data gen /.\/freescale data gen /p' "$S/input/tiny.in")
    [ -n "$mk" ] && (cd "$S" && $mk > /dev/null) || fail "input/tiny.in's header does not make tiny.h5: '$mk'"
    # importing.md's h5py example writes mine.h5: run the doc's own lines
    if [ "$1" = doc/importing.md ] && have_h5py; then
        awk '/^    import h5py, numpy as np/ { on = 1 } on && /^[ \t]*$/ { exit } on { print substr($0, 5) }' \
            "$SRC/doc/importing.md" > "$S/mine.py"
        (cd "$S" && "$PY" mine.py) || fail "doc/importing.md: its h5py example failed"
    fi
}

check_output() {   # FILE LINE CMD LOG: the quoted output lines of the command
    awk -F'\t' -v f="$1" -v l="$2" '$1 == f && $2 + 0 > l + 0 { if ($3 != "o") exit; print $2 "\t" $4 }' \
        "$T/cmds.tsv" | while IFS=$'\t' read -r ql qtext; do
        want=$(shape "$qtext")
        if ! sed 's/^[ \t]*//' "$4" | awk -v w="$want" -v n="$(echo "$want" | wc -w)" '
            { s = ""; for (i = 1; i <= NF && i <= n; i++) { x = $i; if (x ~ /[0-9]/) x = "#"; s = s (i > 1 ? " " : "") x }
              if (s == w) { found = 1; exit } } END { exit !found }'; then
            echo "FAIL: $1:$ql: the doc quotes '$qtext' as the output of line $2 ($3), but no output line starts like '$want'"
            echo "      its output: $(head -c 600 "$4" | tr '\n' '|')"
            echo 1 >> "$T/outfail"
        fi
    done
}

cur=""
while IFS=$'\t' read -r file line kind text; do
    case $kind in
        u) usage=$((usage + 1)); continue ;;
        c) ;;
        *) continue ;;
    esac
    if [ "$file" != "$cur" ]; then cur=$file; scratch_for "$file"; fi
    reason=""
    for ((i = 0; i < ${#SKIP[@]}; i += 2)); do
        # shellcheck disable=SC2053
        if [[ $text == ${SKIP[i]} ]]; then reason=${SKIP[i + 1]}; break; fi
    done
    if [ -z "$reason" ] && [[ $text == scripts/plot* ]] && ! command -v gnuplot >/dev/null 2>&1; then
        reason="gnuplot is not installed"
    fi
    if [ -z "$reason" ] && [[ $text == *" mine.h5"* ]] && ! have_h5py; then
        reason="mine.h5 is the doc's h5py example's, and $PY cannot import h5py"
    fi
    if [ -z "$reason" ] && [[ $text == scripts/demo.sh* ]]; then
        missing=$(. "$SRC/scripts/deps.sh"; for p in "${FREESCALE_PACKAGES[@]}"; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || printf ' %s' "$p"; done)
        [ -z "$missing" ] || reason="it would install Debian packages:$missing"
    fi
    if [ -n "$reason" ]; then
        echo "listed: $file:$line: $text"
        echo "        ($reason)"
        skipped=$((skipped + 1)); continue
    fi
    cmd=$text
    for ((i = 0; i < ${#SUBST[@]}; i += 2)); do cmd=${cmd//"${SUBST[i]}"/"${SUBST[i + 1]}"}; done
    ran=$((ran + 1))
    log=$T/log.$ran
    start=$(date +%s)
    (cd "$S" && bash -c "$cmd") > "$log" 2>&1 < /dev/null
    rc=$?
    secs=$(( $(date +%s) - start ))
    err=$(grep -m 3 -E 'freescale: error|[Rr]efused|[Rr]efusing' "$log")
    if [ "$rc" -ne 0 ] || [ -n "$err" ]; then
        fail "$file:$line: $text"
        [ "$cmd" != "$text" ] && echo "      run as: $cmd"
        echo "      exit $rc; $(grep -m 5 -iE 'error|refus|needs' "$log" | head -c 800)"
        echo "      last lines: $(tail -n 5 "$log" | head -c 800 | tr '\n' '|')"
        continue
    fi
    rm -f "$T/outfail"
    check_output "$file" "$line" "$text" "$log"
    if [ -s "$T/outfail" ]; then failures=$((failures + 1)); else pass "$file:$line (${secs}s): $text"; fi
done < "$T/cmds.tsv"

echo "doc commands: $ran run, $skipped listed as too long or impossible here, $usage usage lines (placeholders) not run; ${SECONDS} s"
[ "$ran" -gt 0 ] || [ -n "${DOC_FILES:-}" ] || fail "no documented command ran"
finish
