/* data_gen_stream: 'freescale data gen --stream', a synthetic stream of
 * days for streaming training (doc/data.md "Synthetic streams").
 *
 *   freescale data gen --stream --days D --users U --items I
 *                      [--new-items-per-day N] [--drift X] [--zipf S]
 *                      [--active F] [--per-day A,B] [--actions] [--labels]
 *                      [--taste-drift X] [--seed S]
 *                      [-o OUT.h5] [--split-days DIR [--file-days K]]
 *
 * Model (every draw keyed by (seed, user, day): the output is a function of
 * the options):
 *   ids       raw ids (version 3): item k (1 .. I + (D-1) N, in order of
 *             appearance) is f(k), user u (0 .. U-1) is f(2^62 + u), where
 *             f(x) = x * 0x9E3779B97F4A7C15, x ^= x >> 29, x *= 0xBF58476D1CE4E5B9,
 *             x ^= x >> 32, every product mod 2^63: a bijection of
 *             [0, 2^63), so the ids are distinct, positive and look hashed;
 *   catalog   day 0 has items 1 .. I; day d >= 1 adds N new ones,
 *             I + (d-1) N + 1 .. I + d N, never used before that day;
 *   ranking   day 0: items 1 .. I in a seeded random order; day d: the
 *             previous ranking rotated by round(X n) places (its round(X n)
 *             most popular items become the least popular, every other
 *             climbs as many ranks; n: yesterday's catalog), then the day's
 *             N new items in front (ranks 1 .. N, in order);
 *   events    each user is active on a day with probability F (default
 *             0.5), then has A .. B events (uniform; default 1,8) at times
 *             uniform in the day (sorted; day 0 starts 2020-01-01), items by
 *             Zipf(S) over the day's ranking (default S = 1), actions
 *             uniform 1 .. 5 (--actions);
 *   labels    --labels: /events/like (0/1) and /events/rating (float) from
 *             the planted model (data_gen_planted.h; item factors by k, the
 *             previous item across days), drawn from streams of their own:
 *             the events are the same without them; --taste-drift X: user u's
 *             factors and bias on day d are cos(X d) times its day-0 draw plus
 *             sin(X d) times a second draw of the same law (drifting tastes;
 *             the events and the day-0 labels unchanged).
 * -o: one dataset, users (those with events) in ascending raw id with all
 * their days; --split-days DIR: DIR/day-0000.h5 ..., one dataset per day
 * (per K days with --file-days K, named by the first) with those days'
 * active users and events (the same events). Each file
 * lists the items it uses in /items/ids and its users' raw ids in /user_map. */
#ifndef FS_DATA_GEN_STREAM_H
#define FS_DATA_GEN_STREAM_H

/* argv holds --stream; the options above. Returns the exit status. */
int data_gen_stream_main(int argc, char **argv);

#endif
