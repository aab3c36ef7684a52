/* data_gen_yambda: 'freescale data gen --yambda', a synthetic stream in
 * the shape of Yandex Music's Yambda (its multi_event table and the
 * track -> album -> artist mappings), for the DLRMv4 recipe (doc/data.md
 * "Yambda-shaped streams", doc/dlrmv4.md).
 *
 *   freescale data gen --yambda [--days D] [--users U] [--tracks T]
 *                      [--artists A] [--albums B] [--median-length M]
 *                      [--length-sigma S] [--max-length L] [--zipf S]
 *                      [--drift X] [--organic F] [--taste G] [--factors F]
 *                      [--artist-share X] [--seed N]
 *                      [--planted-scores] [--csv FILE] [--items-csv FILE]
 *                      (-o OUT.h5 | --split-days DIR | both)
 *
 * Model (every draw keyed by the seed and the user, track, album or
 * artist: the output is a function of the options):
 *   ids       raw ids (version 3) as data gen --stream makes them: track k
 *             (1 .. T) is f(k), user u is f(2^62 + u) (data_gen_stream.h);
 *             albums 1 .. B and artists 1 .. A are small numbers, as in
 *             Yambda; album b belongs to artist 1 + below(A) (keyed by b),
 *             track k to album 1 + below(B) (keyed by k);
 *   users     a history of L_u = round(exp(ln M + S N(0,1))) events
 *             (clamped to [1, L]) at times uniform over the D days, in
 *             5-second steps from 0 (Yambda's timestamps: seconds from the
 *             dataset's start, multiples of 5), sorted;
 *   taste     F factors (--factors, 2): user p_u ~ N(0, I_F), a_u ~ N(0,
 *             0.5^2); artist w_a ~ N(0, I_F); track q_k = sqrt(X) w_artist(k)
 *             + sqrt(1 - X) e_k, e_k ~ N(0, I_F) (X: --artist-share, 1),
 *             c_k ~ N(0, 0.5^2);
 *               s = 0.3 + a_u + c_k + G p_u.q_k / sqrt F   (G: --taste, 2)
 *   choice    an event is organic with probability --organic (0.45): its
 *             track is one of artist a's (uniformly), a drawn with P(a) ~
 *             exp(p_u.w_a / sqrt F) among the artists with tracks (so the
 *             history shows the taste); else recommended: by popularity,
 *             day d's ranking a seeded shuffle of 1 .. T rotated by d x
 *             round(X T) places (--drift X), rank Zipf(S);
 *   events    with sig = sigmoid(s): like 0.04 sig, dislike 0.012 (1 - sig),
 *             unlike 0.003, undislike 0.001, else listen; a listen's
 *             played_ratio_pct = min(100, floor(100 sigmoid(s + l))), l
 *             logistic, so P(played_ratio_pct >= 50) = sig; its
 *             track_length_seconds the track's (round(exp(5.3 + 0.3 N)));
 *             both 0 for the other types (Yambda: null);
 *   optimum   listen_plus = played_ratio_pct >= 50 has the probability
 *             P(listen) sig; its AUC, logloss and NE over the last day's
 *             events (the next-day test of a 1-day stream) are written as
 *             planted_* attributes to every output file; beside them
 *             planted_posterior_auc, _logloss, _ne: the optimum of what
 *             the history shows, each user's (p_u, a_u) from their
 *             posterior given the events before the last day
 *             (data_gen_yambda_post.c, doc/data.md).
 * Columns: /events/event_type categorical with the fixed ids dislike 1,
 * like 2, listen 3, undislike 4, unlike 5 (bytewise order, the ids of
 * data import --format yambda), /events/is_organic categorical (0 -> 1,
 * 1 -> 2, map "0", "1"), /events/played_ratio_pct and
 * /events/track_length_seconds float, /events/planted_p float
 * (--planted-scores: each event's true listen_plus probability, for
 * tests, with the factors beside: /planted_users [users, 9] = p_u, a_u in
 * the file's user order, /planted_tracks [items, 9] = q_k, c_k in
 * /items/ids order, /planted_artists [artists, F + 1] = w_a and whether
 * the artist has tracks, the attribute planted_taste = G); /items/artist and /items/album categorical, numbered per file
 * in ascending artist / album number among the file's tracks (the
 * importer's numbering), the numbers kept as their maps. --csv writes the
 * events as Yambda's multi_event columns (uid, item_id, timestamp,
 * is_organic, played_ratio_pct, track_length_seconds, event_type; empty
 * fields for a non-listen's nulls), --items-csv the tracks' item_id,
 * artist, album: the importer's test input. */
#ifndef FS_DATA_GEN_YAMBDA_H
#define FS_DATA_GEN_YAMBDA_H

/* argv holds --yambda; the options above. Returns the exit status. */
int data_gen_yambda_main(int argc, char **argv);

#endif
