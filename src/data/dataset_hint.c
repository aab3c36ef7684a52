/* dataset_hint: what a path that HDF5 cannot open as a dataset is, and how
 * to make a dataset of it (the common first mistake: the ratings CSV or the
 * folder of a download given as data.path); see dataset.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "data/dataset.h"

#define IMPORT_HINT                                                                           \
    "make a dataset with 'freescale data import --format movielens|csv|sasrec|jsonl INPUT -o " \
    "OUT.h5' (doc/data.md) and give OUT.h5"

/* 1 when the HDF5 signature is at offset 0 or at a power of two from 512
 * (where a file with a user block has it), 0 if not, -1 if unreadable. */
static int has_hdf5_signature(const char *path, off_t size)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    int found = 0;
    for (off_t at = 0; !found && at + 8 <= size && at <= ((off_t)1 << 30); at = at ? 2 * at : 512) {
        unsigned char head[8];
        found = pread(fd, head, sizeof head, at) == (ssize_t)sizeof head &&
                !memcmp(head, sig, sizeof sig);
    }
    close(fd);
    return found;
}

int dataset_hint_not_hdf5(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errorf(err, errlen, "%s: cannot open dataset: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) { /* a MovieLens download: name its ratings file */
        static const char *known[][2] = {{"ratings.csv", "csv"}, {"ratings.dat", "movielens"}};
        for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
            char in[4200];
            snprintf(in, sizeof in, "%s/%s", path, known[i][0]);
            if (access(in, R_OK) == 0)
                return errorf(err, errlen, "%s is a directory, not a dataset: make one of its "
                              "ratings with 'freescale data import --format %s %s -o OUT.h5' "
                              "(doc/data.md) and give OUT.h5", path, known[i][1], in);
        }
        return errorf(err, errlen, "%s is a directory, not a dataset: " IMPORT_HINT
                      " (INPUT: the ratings file in it)", path);
    }
    int sig = has_hdf5_signature(path, st.st_size);
    if (sig < 0)
        return errorf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    if (sig == 0) {
        unsigned char head[2] = {0, 0};
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(head, 1, 2, f) : 0;
        if (f)
            fclose(f);
        const int gz = n == 2 && head[0] == 0x1f && head[1] == 0x8b;
        if (st.st_size == 0)
            return errorf(err, errlen, "%s is empty, not a dataset: " IMPORT_HINT, path);
        return errorf(err, errlen, "%s is not an HDF5 file (%s): make a dataset of it with "
                      "'freescale data import --format csv %s -o OUT.h5' (or --format movielens, "
                      "sasrec, jsonl; doc/data.md) and give OUT.h5", path,
                      gz ? "a gzip file; data import reads it as it is"
                         : "a text file, a CSV of ratings?", path);
    }
    return errorf(err, errlen, "%s: not a readable HDF5 file (truncated or corrupt?)", path);
}
