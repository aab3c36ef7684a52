/* import_table: records of delimited text for 'freescale data import': the
 * events' csv reader and the side files (item and user features) share it.
 *
 * With quoting, a one-character delimiter goes through libcsv (RFC 4180 quoting, strict),
 * fed a line at a time so that every record and quoting error has its exact
 * line (a record whose quoted field runs over several lines starts at the
 * line where it began). A longer delimiter ("::", " | ") splits each line
 * literally, without quoting. Blank lines are no records. */
#ifndef FS_IMPORT_TABLE_H
#define FS_IMPORT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "tools/import_input.h"

/* One record: nf fields, field i is buf[off[i] .. off[i] + len[i]) and
 * NUL-terminated; line: where the record starts. */
struct import_record {
    int64_t line;
    int32_t nf;
    const char *buf;
    const size_t *off, *len;
};

static inline const char *import_record_field(const struct import_record *r, int32_t i,
                                              size_t *len)
{
    *len = r->len[i];
    return r->buf + r->off[i];
}

struct import_table_ops {
    /* a whole record */
    void (*record)(void *ctx, const struct import_record *r);
    /* a record that cannot be parsed (line, what): counted as a row by the
     * caller; the reader goes on with the next line if this returns */
    void (*bad)(void *ctx, int64_t line, const char *what);
    /* each line read (its number), before it is parsed; may be NULL */
    void (*line)(void *ctx, int64_t line);
    void *ctx;
};

/* Read every record of in, split at delimiter: with quoting and a
 * one-character delimiter through libcsv, else literally. */
void import_table_read(struct import_input *in, const char *delimiter, int quoting,
                       const struct import_table_ops *ops);

#endif
