#!/bin/sh
# cli_import_features: the importers keep the published datasets' side
# information. Small synthetic files in the published layouts (ML-1M
# ratings.dat + users.dat + movies.dat; ML-100K u.data + u.user + u.item;
# ml-latest's ratings.csv + movies.csv; KuaiRand's log_standard,
# user_features and video_features_basic csv files in their column order)
# are imported with their features, checked value by value against what the
# files say (h5py), and trained on; bad side files (missing join key,
# unknown column, a number that is not one, a duplicate row) end with
# FILE:LINE and leave no output.
. "$(dirname "$0")/lib.sh"
need_mpirun
O=$T/out.h5

# --- ML-1M layout -------------------------------------------------------------
awk 'BEGIN { srand(3); for (u = 1; u <= 40; u++) for (k = 0; k < 12; k++)
    printf "%d::%d::%d::%d\n", u, 1 + int(rand() * 30), 1 + int(rand() * 5), 978300000 + 100 * u + k }' \
    > "$T/ratings.dat"
awk 'BEGIN { g[0] = "F"; g[1] = "M"; split("1 18 25 35 45 50 56", a, " ")
    for (u = 1; u <= 41; u++) printf "%d::%s::%s::%d::%05d\n", u, g[u % 2], a[1 + u % 7], u % 21, 10000 + 997 * u }' \
    > "$T/users.dat"
awk 'BEGIN { split("Action|Comedy,Drama,Animation|Children'"'"'s|Comedy,Thriller", gs, ",")
    for (m = 1; m <= 31; m++) printf "%d::Movie %d (%d)::%s\n", m, m, 1990 + m % 7, gs[1 + m % 4] }' \
    > "$T/movies.dat"
expect_ok "$FS" data import --format movielens "$T/ratings.dat" --users "$T/users.dat" \
    --items "$T/movies.dat" -o "$T/ml1m.h5"
grep -q "features: events/rating, items/genres, items/year, users/gender, users/age, users/occupation, users/zip_prefix" \
    "$T/out" || fail "ml-1m features: $(cat "$T/out")"
expect_ok "$FS" data stats "$T/ml1m.h5"
for want in "^feature items/genres: categorical multi-valued, cardinality 7, value map$" \
    "^feature items/year: categorical, cardinality 8, value map$" \
    "^feature users/gender: categorical, cardinality 3, value map$" \
    "^feature users/age: categorical, cardinality 8, value map$"; do
    grep -q "$want" "$T/out" || fail "ml-1m stats lacks '$want': $(grep '^feature' "$T/out")"
done
if have_h5py; then
    "$PY" - "$T/ml1m.h5" "$T/users.dat" "$T/movies.dat" <<'EOF' || fail "ml-1m values"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
imap, umap = f["item_map"][:], f["user_map"][:]
def vals(kind, name):
    m = [b"?"] + list(f["feature_maps/%s/%s" % (kind, name)][:])
    return lambda i: m[i].decode()
users = {int(l.split("::")[0]): l.strip().split("::") for l in open(sys.argv[2])}
g, a, o, z = (vals("users", n) for n in ("gender", "age", "occupation", "zip_prefix"))
for u, orig in enumerate(umap):
    row = users[int(orig)]
    got = (g(f["users/gender"][u]), a(f["users/age"][u]), o(f["users/occupation"][u]), z(f["users/zip_prefix"][u]))
    assert got == (row[1], row[2], row[3], row[4][:2]), (orig, got, row)
movies = {int(l.split("::")[0]): l.strip().split("::") for l in open(sys.argv[3])}
gn, yr = vals("items", "genres"), vals("items", "year")
off, v = f["items/genres/offsets"][:], f["items/genres/values"][:]
for i, orig in enumerate(imap):
    row = movies[int(orig)]
    assert [gn(x) for x in v[off[i]:off[i + 1]]] == row[2].split("|"), (orig, row)
    assert yr(f["items/year"][i]) == row[1][-5:-1], (orig, row)
print("ml-1m values ok")
EOF
fi
# a user of the events without a row in users.dat gets missing values
head -n 30 "$T/users.dat" > "$T/users30.dat"
expect_ok "$FS" data import --format movielens "$T/ratings.dat" --users "$T/users30.dat" -o "$T/u30.h5"
grep -q "users30.dat: 30 rows, 0 of them for users without events (skipped); 10 of the 40 users have no row" \
    "$T/out" || fail "missing users: $(cat "$T/out")"

# --- ML-100K layout -----------------------------------------------------------
awk 'BEGIN { srand(5); for (u = 1; u <= 30; u++) for (k = 0; k < 10; k++)
    printf "%d\t%d\t%d\t%d\n", u, 1 + int(rand() * 20), 1 + int(rand() * 5), 880000000 + 50 * u + k }' \
    > "$T/u.data"
awk 'BEGIN { split("student,engineer,writer", oc, ",")
    for (u = 1; u <= 30; u++) printf "%d|%d|%s|%s|%05d\n", u, 10 + 2 * u, u % 3 ? "M" : "F", oc[1 + u % 3], 90000 + u }' \
    > "$T/u.user"
awk 'BEGIN { for (m = 1; m <= 20; m++) { printf "%d|Film %d (%d)|01-Jan-%d||http://x", m, m, 1980 + m, 1980 + m
    for (g = 0; g < 19; g++) printf "|%d", (g == m % 19 || g == (m + 5) % 19) ? 1 : 0; printf "\n" } }' \
    > "$T/u.item"
expect_ok "$FS" data import --format movielens "$T/u.data" --users "$T/u.user" --items "$T/u.item" \
    -o "$T/ml100k.h5"
expect_ok "$FS" data stats "$T/ml100k.h5"
grep -q "^feature users/age: categorical, cardinality [0-9]*, value map$" "$T/out" &&
    grep -q "^feature items/genres values: 40 (2.000 per item, at most 2)$" "$T/out" ||
    fail "ml-100k stats: $(grep '^feature' "$T/out")"
if have_h5py; then # ages in ML-1M's groups: 12 -> 1, 20 -> 18, 40 -> 35, 60 -> 56
    "$PY" -c "
import h5py; f = h5py.File('$T/ml100k.h5', 'r'); m = [b'-'] + list(f['feature_maps/users/age'][:])
ages = {int(u): m[a].decode() for u, a in zip(f['user_map'][:], f['users/age'][:])}
assert (ages[1], ages[5], ages[15], ages[25]) == ('1', '18', '35', '56'), ages
assert [g.decode() for g in f['feature_maps/items/genres'][:3]] == ['Action', 'Adventure', 'Animation']
" || fail "ml-100k ages"
fi

# --- ml-latest layout (ratings.csv + movies.csv), csv and movielens formats ----
printf 'userId,movieId,rating,timestamp\n1,1,4.0,964982703\n1,3,4.0,964981247\n1,6,4.0,964982224\n2,1,3.5,1445714835\n2,6,4.0,1445714885\n2,3,1.0,1445715013\n' > "$T/ratings.csv"
printf 'movieId,title,genres\n1,Toy Story (1995),Adventure|Animation|Children|Comedy|Fantasy\n3,"Grumpier Old Men, The (1995)",Comedy|Romance\n6,Heat (1995),(no genres listed)\n7,Unused (2001),Drama\n' > "$T/movies.csv"
expect_ok "$FS" data import --format csv "$T/ratings.csv" --items "$T/movies.csv" -o "$T/lat1.h5"
expect_ok "$FS" data import --format movielens "$T/ratings.csv" --items "$T/movies.csv" -o "$T/lat2.h5"
expect_ok "$FS" data stats "$T/lat1.h5"
grep -q "^feature items/genres values: 7 (2.333 per item, at most 5)$" "$T/out" &&
    grep -q "^feature items/genres items without a value: 1 (33.3%)$" "$T/out" ||
    fail "ml-latest genres: $(grep '^feature' "$T/out")"
if have_h5py; then
    "$PY" -c "
import h5py, numpy as np
a, b = h5py.File('$T/lat1.h5', 'r'), h5py.File('$T/lat2.h5', 'r')
for k in ('item_ids', 'offsets', 'timestamps', 'actions', 'items/genres/values', 'items/year'):
    assert np.array_equal(a[k][:], b[k][:]), k
" || fail "csv and movielens formats differ"
fi

# --- KuaiRand layout (columns in the published order) ---------------------------
{ echo "user_id,video_id,date,hourmin,time_ms,is_click,is_like,is_follow,is_comment,is_forward,is_hate,long_view,play_time_ms,duration_ms,profile_stay_time,comment_stay_time,is_profile_enter,is_rand,tab"
  awk 'BEGIN { srand(9); for (u = 0; u < 24; u++) for (k = 0; k < 15; k++) {
    t = 1649433600000 + 60000 * (u * 15 + k); v = 100 + int(rand() * 40)
    printf "%d,%d,20220408,%d,%.0f,%d,%d,0,0,0,0,%d,%d,%d,0,0,0,%d,%d\n", u, v, 1000 + k, t,
        rand() < 0.5, rand() < 0.1, rand() < 0.3, int(rand() * 30000), 30000, rand() < 0.05, int(rand() * 3) } }'
} > "$T/log_standard_4_08_to_4_21_pure.csv"
{ printf 'user_id,user_active_degree,is_lowactive_period,is_live_streamer,is_video_author,follow_user_num,follow_user_num_range,fans_user_num,fans_user_num_range,friend_user_num,friend_user_num_range,register_days,register_days_range'
  for k in $(seq 0 17); do printf ',onehot_feat%d' "$k"; done; echo
  awk 'BEGIN { split("high_active,full_active,middle_active", d, ",")
    for (u = 0; u < 24; u++) { printf "%d,%s,0,0,%d,%d,%s,%d,0,0,0,%d,31-60", u, d[1 + u % 3], u % 2, u * 3, u < 12 ? "\"(0,10]\"" : "\"(10,50]\"", u, 40 + u
      for (k = 0; k < 18; k++) printf ",%d", (u + k) % 4; printf "\n" } }'
} > "$T/user_features_pure.csv"
{ echo "video_id,author_id,video_type,upload_dt,upload_type,visible_status,video_duration,server_width,server_height,music_id,music_type,tag"
  awk 'BEGIN { for (v = 100; v < 140; v++) printf "%d,%d,%s,2022-03-%02d,%s,public,%d.0,720,1280,%d,%d,\"%d,%d\"\n",
    v, v % 7, v % 5 ? "NORMAL" : "AD", 1 + v % 28, v % 2 ? "ShortImport" : "PictureSet", 10000 + v, v % 9, v % 3, v % 11, (v + 3) % 11 }'
} > "$T/video_features_basic_pure.csv"
KR="--format csv --user-col user_id --item-col video_id --time-col time_ms --time-unit ms --no-rating
 --event-cols is_click,is_like,long_view,tab,play_time_ms:float
 --user-features $T/user_features_pure.csv --user-key user_id
 --user-cols user_active_degree,is_video_author,follow_user_num_range,register_days_range,onehot_feat0
 --item-features $T/video_features_basic_pure.csv --item-key video_id
 --item-cols author_id,video_type,upload_type,music_type,video_duration:float,tag:multi --multi-sep ,"
expect_ok "$FS" data import $KR "$T/log_standard_4_08_to_4_21_pure.csv" -o "$T/kr.h5"
expect_ok "$FS" data stats "$T/kr.h5"
for want in "^features: 16$" "^feature events/is_click: categorical, cardinality 3, value map$" \
    "^feature events/play_time_ms: float$" "^feature items/tag: categorical multi-valued, cardinality 12, value map$" \
    "^feature items/tag values: [0-9]* (2.000 per item, at most 2)$" \
    "^feature users/user_active_degree distinct values used: 3 of 3$" \
    "^feature items/video_duration: float$"; do
    grep -q "$want" "$T/out" || fail "kuairand stats lacks '$want': $(grep '^feature' "$T/out")"
done
grep -q "^timestamp min: 1649433600 " "$T/out" || fail "time_ms not in seconds: $(grep timestamp "$T/out")"

# --- JSON lines with event fields (strings, numbers, booleans, null, absent) ----
printf '%s\n' '{"u": "a", "i": "x", "t": 1, "device": "ios", "liked": true, "dwell": 3.5}' \
    '{"u": "a", "i": "y", "t": 2, "device": "web", "liked": false, "dwell": 1}' \
    '{"u": "a", "i": "z", "t": 3, "device": null, "dwell": 0.25}' \
    '{"u": "b", "i": "x", "t": 1, "device": "ios", "liked": true, "dwell": 2}' \
    '{"u": "b", "i": "z", "t": 5, "device": "android", "liked": true, "dwell": 7}' > "$T/ev.jsonl"
expect_ok "$FS" data import --format jsonl --string-ids --user-col u --item-col i --time-col t \
    --no-rating --event-cols device,liked,dwell:float "$T/ev.jsonl" -o "$T/ev.h5"
expect_ok "$FS" data stats "$T/ev.h5"
for want in "^feature events/device: categorical, cardinality 4, value map$" \
    "^feature events/device events without a value: 1 (20.0%)$" \
    "^feature events/liked: categorical, cardinality 3, value map$" \
    "^feature events/liked events without a value: 1 (20.0%)$" \
    "^feature events/dwell range: 0.25 .. 7, mean 2.75$"; do
    grep -q "$want" "$T/out" || fail "jsonl event columns lack '$want': $(grep '^feature' "$T/out")"
done
printf '%s\n' '{"u": "a", "i": "x", "t": 1, "dwell": "long"}' > "$T/evbad.jsonl"
expect_error "evbad.jsonl:1: field 'dwell' = 'long' is not a number (a float event column)" \
    "$FS" data import --format jsonl --string-ids --user-col u --item-col i --time-col t \
    --no-rating --event-cols dwell:float "$T/evbad.jsonl" -o "$O"
no_file "$O"

# --- training on each import, with its features ----------------------------------
F_ml="features.item=genres,year features.user=gender,age,occupation,zip_prefix"
F_kr="features.item=video_type,tag,author_id features.event=is_click,tab features.user=user_active_degree"
for f in ml1m ml100k kr; do
    feats=$F_ml; [ $f = kr ] && feats=$F_kr
    expect_ok "$MPIRUN" -np 2 "$FS" train "$TOP_SRCDIR/input/tiny.in" "data.path=$T/$f.h5" \
        train.epochs=1 data.max_seq_len=8 "output.metrics=$T/$f.jsonl" $feats
    grep -q '"event":"eval","split":"test"' "$T/$f.jsonl" || fail "$f: no test line"
    grep -q "user feature .* (contextual token)" "$T/out" || fail "$f: features not used: $(head -c 600 "$T/out")"
done

# --- bad side files: FILE:LINE, no output ----------------------------------------
bad() { # bad MESSAGE import-arguments...
    msg=$1; shift
    expect_error "$msg" "$FS" data import "$@" -o "$O"
    no_file "$O"
}
printf '1::Movie (1990)::Drama\n::Other (1991)::Comedy\n' > "$T/nokey.dat"
bad "nokey.dat:2: the key column 'movieId' is empty (a row without its item id: missing join key)" \
    --format movielens "$T/ratings.dat" --items "$T/nokey.dat"
printf '1::Movie (1990)::Drama\n2::Other (1991)::Comedy\n1::Again (1992)::War\n' > "$T/dup.dat"
bad "dup.dat:3: item '1' appears twice (first at line 1): one row per item" \
    --format movielens "$T/ratings.dat" --items "$T/dup.dat"
bad "video_features_basic_pure.csv:1: --item-cols: no column 'genre' in the header (columns: 'video_id', 'author_id'" \
    $(echo "$KR" | sed 's/video_duration:float,tag:multi/genre/') "$T/log_standard_4_08_to_4_21_pure.csv"
bad "user_features_pure.csv:1: --user-key: no column 'uid' in the header" \
    $(echo "$KR" | sed 's/--user-key user_id/--user-key uid/') "$T/log_standard_4_08_to_4_21_pure.csv"
sed '5s/,[0-9]*\.0,720,/,long,720,/' "$T/video_features_basic_pure.csv" > "$T/vf_bad.csv"
bad "vf_bad.csv:5: field 'video_duration' = 'long' is not a number (a float column)" \
    $(echo "$KR" | sed "s|$T/video_features_basic_pure.csv|$T/vf_bad.csv|") "$T/log_standard_4_08_to_4_21_pure.csv"
sed '3s/^[0-9]*,/,/' "$T/user_features_pure.csv" > "$T/uf_nokey.csv"
bad "uf_nokey.csv:3: the key column 'user_id' is empty (a row without its user id: missing join key)" \
    $(echo "$KR" | sed "s|$T/user_features_pure.csv|$T/uf_nokey.csv|") "$T/log_standard_4_08_to_4_21_pure.csv"
sed '7s/^[0-9]*,/0,/' "$T/user_features_pure.csv" > "$T/uf_dup.csv"
bad "uf_dup.csv:7: user '0' appears twice (first at line 2): one row per user" \
    $(echo "$KR" | sed "s|$T/user_features_pure.csv|$T/uf_dup.csv|") "$T/log_standard_4_08_to_4_21_pure.csv"
sed '9s/^\([0-9]*\),/x\1,/' "$T/user_features_pure.csv" > "$T/uf_int.csv"
bad "uf_int.csv:9: key 'user_id' = 'x7' is not an integer (the events' user ids are; string ids: --user-ids string)" \
    $(echo "$KR" | sed "s|$T/user_features_pure.csv|$T/uf_int.csv|") "$T/log_standard_4_08_to_4_21_pure.csv"
bad "log_standard_4_08_to_4_21_pure.csv:1: --event-cols: no column 'is_share' in the header" \
    $(echo "$KR" | sed 's/is_click,/is_share,/') "$T/log_standard_4_08_to_4_21_pure.csv"
sed '4s/,[0-9]*,30000,/,slow,30000,/' "$T/log_standard_4_08_to_4_21_pure.csv" > "$T/log_bad.csv"
bad "log_bad.csv:4: field 'play_time_ms' = 'slow' is not a number (a float event column)" \
    $KR "$T/log_bad.csv"
printf 'id|Film (1999)|x|y|z|0|1\n' > "$T/short.item"
bad "short.item:1: 7 fields, expected 24 (u.item: id|title" --format movielens "$T/u.data" \
    --items "$T/short.item"
bad "--item-features $T/video_features_basic_pure.csv: name its key column with --item-key COL" \
    --format csv "$T/ratings.csv" --item-features "$T/video_features_basic_pure.csv"
bad "--event-cols: 'stars': the MovieLens ratings have the columns user, item, rating, timestamp" \
    --format movielens "$T/ratings.dat" --event-cols stars
finish
