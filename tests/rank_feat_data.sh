# rank_feat_data.sh: the ranking data with features that the device tests
# and bench/syncs.sh train on (sourced; tests/device_feat_body.sh,
# tests/fake_dynamic_feat.sh, bench/syncs.sh). rank_feat_data DIR FS
# writes DIR/r.h5 (48 users, 90 items with two genres each, a user's age,
# events with a rating and a click) by FS data import; non-zero on failure.
rank_feat_data() {
    awk 'BEGIN { srand(5); print "userId,movieId,rating,timestamp,click"
        for (u = 1; u <= 48; u++) { n = 8 + int(rand() * 40)
            for (k = 0; k < n; k++) { it = 1 + int(rand() * rand() * 90); r = 0.5 + int(rand() * 10) / 2
                printf "%d,%d,%.1f,%d,%d\n", u, it, r, 964980000 + 1000 * u + 37 * k, (r >= 3.5) != (k % 7 == 0) } } }' \
        > "$1/ratings.csv"
    awk 'BEGIN { split("Action,Comedy,Drama,Thriller,Romance", g, ","); print "movieId,title,genres"
        for (m = 1; m <= 90; m++) printf "%d,Movie %d (%d),%s|%s\n", m, m, 1990 + m % 20, g[1 + m % 5], g[1 + (m * 3) % 5] }' \
        > "$1/movies.csv"
    awk 'BEGIN { print "userId,age"; for (u = 1; u <= 48; u++) printf "%d,%d\n", u, 18 + u % 5 * 10 }' > "$1/users.csv"
    "$2" data import --format csv "$1/ratings.csv" --items "$1/movies.csv" --event-cols rating:float,click \
        --user-features "$1/users.csv" --user-key userId -o "$1/r.h5" >/dev/null
}
