/* print_maps: the maps of a dataset as the reader returns them, for
 * tests/cli_h5py.sh to compare with what h5py reads from the same file.
 *
 *   tests/print_maps FILE.h5   one line "NAME INDEX VALUE" per entry of
 *                              /item_map, /user_map, /item_map_str and
 *                              /user_map_str (those present, in this order)
 *
 * Exit 1 with the reader's message when the file or a map is refused. */
#include <stdio.h>
#include <stdlib.h>

#include "data/dataset.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: print_maps FILE.h5\n");
        return 2;
    }
    struct dataset ds;
    char err[1024];
    if (dataset_open(&ds, argv[1], err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int rc = 0;
    const char *names[4] = {"item_map", "user_map", "item_map_str", "user_map_str"};
    int present[4] = {ds.has_item_map, ds.has_user_map, ds.has_item_map_str,
                      ds.has_user_map_str};
    for (int k = 0; k < 4 && rc == 0; k++) {
        if (!present[k])
            continue;
        int64_t n = k % 2 == 0 ? ds.num_items : ds.num_users;
        int64_t *ids = k < 2 ? dataset_read_map(&ds, names[k], err, sizeof err) : NULL;
        char **s = k >= 2 ? dataset_read_map_str(&ds, names[k], err, sizeof err) : NULL;
        if (!ids && !s) {
            fprintf(stderr, "%s\n", err);
            rc = 1;
        }
        for (int64_t i = 0; i < n && rc == 0; i++) {
            if (ids)
                printf("%s %lld %lld\n", names[k], (long long)i, (long long)ids[i]);
            else
                printf("%s %lld %s\n", names[k], (long long)i, s[i]);
        }
        free(ids);
        free(s);
    }
    dataset_close(&ds);
    return rc;
}
