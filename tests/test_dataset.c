/* test_dataset: write a dataset on rank 0, read it back on P ranks by user
 * ranges (hyperslabs) and compare with what was written; P = 1, 2, 4 must
 * all see the same events. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "comm/comm.h"
#include "data/dataset.h"
#include "mpitest.h"

#define USERS 37
#define ITEMS 1000

/* Known content: user u has len(u) events; item, time and action are
 * functions of (u, j). Users 5 and 20 are empty. */
static int64_t len_of(int64_t u) { return (u == 5 || u == 20) ? 0 : 1 + (u * 7919) % 300; }
static int64_t item_of(int64_t u, int64_t j) { return 1 + (u * 131 + j * 17) % ITEMS; }
static int64_t time_of(int64_t u, int64_t j) { return 1000000 * u + 60 * j + (j % 3 == 0); }
static int32_t action_of(int64_t u, int64_t j) { return (int32_t)((u + j) % 5); }

static void write_known(const char *path)
{
    char err[1024];
    struct dataset_writer *w = dataset_writer_open(path, 1, 1, err, sizeof err);
    T_CHECK(w, "%s", err);
    /* append in uneven groups of users to exercise extension */
    int64_t u = 0;
    while (u < USERS) {
        int64_t n = u % 2 ? 3 : 7;
        if (u + n > USERS)
            n = USERS - u;
        int64_t lens[7], total = 0;
        for (int64_t i = 0; i < n; i++)
            total += lens[i] = len_of(u + i);
        int64_t *items = xmalloc((size_t)total * 8), *ts = xmalloc((size_t)total * 8);
        int32_t *act = xmalloc((size_t)total * 4);
        int64_t e = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < lens[i]; j++, e++) {
                items[e] = item_of(u + i, j);
                ts[e] = time_of(u + i, j);
                act[e] = action_of(u + i, j);
            }
        T_CHECK(!dataset_writer_append(w, n, lens, items, ts, act, err, sizeof err), "%s", err);
        free(items);
        free(ts);
        free(act);
        u += n;
    }
    int64_t map[ITEMS];
    for (int64_t i = 0; i < ITEMS; i++)
        map[i] = 5000 + 3 * i;
    T_CHECK(!dataset_writer_map(w, "item_map", map, ITEMS, err, sizeof err), "%s", err);
    T_CHECK(!dataset_writer_close(w, ITEMS, err, sizeof err), "%s", err);
}

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    char err[1024];
    char *path = NULL;
    if (c.rank == 0) {
        char dir[] = "/tmp/fs-dataset-XXXXXX";
        T_CHECK(mkdtemp(dir), "mkdtemp");
        path = xmalloc(strlen(dir) + 16);
        sprintf(path, "%s/known.h5", dir);
        write_known(path);
        /* the temporary name is gone after a successful close */
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        T_CHECK(access(tmp, F_OK) != 0, "temporary %s left behind", tmp);
        /* an aborted writer leaves nothing */
        char other[300];
        snprintf(other, sizeof other, "%s/aborted.h5", dir);
        struct dataset_writer *w = dataset_writer_open(other, 0, 0, err, sizeof err);
        T_CHECK(w, "%s", err);
        dataset_writer_abort(w);
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", other, (long)getpid());
        T_CHECK(access(other, F_OK) != 0 && access(tmp, F_OK) != 0, "aborted file left");
    } else {
        path = xstrdup("");
    }
    comm_bcast_string(&c, &path, 0);
    comm_barrier(&c);

    struct dataset ds;
    T_CHECK(!dataset_open(&ds, path, err, sizeof err), "%s", err);
    int64_t events = 0;
    for (int64_t u = 0; u < USERS; u++)
        events += len_of(u);
    T_CHECK(ds.num_users == USERS && ds.num_items == ITEMS && ds.num_events == events,
            "header %lld %lld %lld", (long long)ds.num_users, (long long)ds.num_items,
            (long long)ds.num_events);
    T_CHECK(ds.has_timestamps && ds.has_actions && ds.has_item_map && !ds.has_user_map,
            "optional datasets");
    for (int64_t u = 0; u < USERS; u++)
        T_CHECK(dataset_length(&ds, u) == len_of(u), "length of user %lld", (long long)u);

    /* this rank's contiguous block of users */
    int64_t u0 = USERS * c.rank / c.size, u1 = USERS * (c.rank + 1) / c.size;
    int64_t n = ds.offsets[u1] - ds.offsets[u0];
    int64_t *items = xmalloc((size_t)(n + 1) * 8), *ts = xmalloc((size_t)(n + 1) * 8);
    int32_t *act = xmalloc((size_t)(n + 1) * 4);
    T_CHECK(!dataset_read_users(&ds, u0, u1, items, ts, act, err, sizeof err), "%s", err);
    int64_t e = 0, sum = 0;
    for (int64_t u = u0; u < u1; u++)
        for (int64_t j = 0; j < len_of(u); j++, e++) {
            T_CHECK(items[e] == item_of(u, j) && ts[e] == time_of(u, j) &&
                        act[e] == action_of(u, j),
                    "event %lld of user %lld", (long long)j, (long long)u);
            sum += items[e];
        }
    /* an empty range and an empty user read nothing and succeed */
    T_CHECK(!dataset_read_users(&ds, 5, 5, items, NULL, NULL, err, sizeof err), "%s", err);
    T_CHECK(!dataset_read_users(&ds, 5, 6, items, NULL, NULL, err, sizeof err), "%s", err);
    T_CHECK(dataset_read_users(&ds, 0, USERS + 1, items, NULL, NULL, err, sizeof err) == -1,
            "range past the end accepted");

    int64_t total = comm_allreduce_sum_i64(&c, sum), expect = 0;
    for (int64_t u = 0; u < USERS; u++)
        for (int64_t j = 0; j < len_of(u); j++)
            expect += item_of(u, j);
    T_CHECK(total == expect, "checksum %lld != %lld", (long long)total, (long long)expect);

    int64_t *map = dataset_read_map(&ds, "item_map", err, sizeof err);
    T_CHECK(map && map[0] == 5000 && map[ITEMS - 1] == 5000 + 3 * (ITEMS - 1), "item_map");
    T_CHECK(dataset_read_map(&ds, "user_map", err, sizeof err) == NULL, "absent user_map");
    T_CHECK(!dataset_validate(&ds, err, sizeof err), "%s", err);
    free(map);
    free(items);
    free(ts);
    free(act);
    dataset_close(&ds);
    comm_barrier(&c);
    if (c.rank == 0) {
        unlink(path);
        *strrchr(path, '/') = '\0';
        rmdir(path);
        printf("dataset read on %d ranks: %lld events ok\n", c.size, (long long)events);
    }
    free(path);
    comm_free(&c);
    return 0;
}
