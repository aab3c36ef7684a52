/* import_side: per-user and per-item features from side files joined by key
 * to the events of 'freescale data import':
 *
 *   generic   (--user-features / --item-features FILE, --user-key /
 *             --item-key COL, --user-cols / --item-cols LIST): a csv file
 *             with a header; LIST names the columns kept (default: all but
 *             the key), each NAME (categorical), NAME:multi (values split
 *             at --multi-sep) or NAME:float (import_side.c);
 *   MovieLens (--users FILE, --items FILE): users.dat or u.user (gender,
 *             age, occupation, zip_prefix), movies.dat, movies.csv or
 *             u.item (genres multi-valued, year from the title), the
 *             layout told by the file's first line (import_ml.c).
 *
 * Rows whose key has no events are skipped, entities without a row get
 * missing values (0; floats 0), both counted in a log line. A row without
 * its key, a key that is not an integer where the events' ids are, a
 * second row of one key, a column that is not in the header, a field that
 * is not a number where one belongs: "FILE:LINE: what" and the end of the
 * program, before any output is written. */
#ifndef FS_IMPORT_SIDE_H
#define FS_IMPORT_SIDE_H

#include <stdint.h>

#include "tools/import_feat.h"
#include "tools/import_ids.h"

/* The entities of one kind the events use. */
struct import_join {
    enum dataset_feat_kind kind;   /* DS_USERS or DS_ITEMS */
    const char *what;              /* "user" or "item", for messages */
    const struct import_ids *ids;  /* the events' original ids */
    const int32_t *rank;           /* [ids->n] dense index, -1 = dropped */
    int64_t n;                     /* dense entities */
    int64_t *line;                 /* [n] line of the entity's row, 0 = none */
    int64_t rows, unknown;         /* rows read; of which for ids without events */
};

void import_join_init(struct import_join *j, enum dataset_feat_kind kind,
                      const struct import_ids *ids, const int32_t *rank, int64_t n);
void import_join_free(struct import_join *j);
/* The dense entity of key s[0 .. len) in column col of path:line, or -1
 * when the events do not have it; ends the program on a missing key, a key
 * that is not an integer (integer ids) and a key seen before. */
int64_t import_join_key(struct import_join *j, const char *path, int64_t line, const char *col,
                        const char *s, size_t len);
/* Log how many rows were joined and how many entities have none; reset. */
void import_join_report(struct import_join *j, const char *path);

struct import_side {
    const char *path, *key, *cols; /* cols NULL: every column but the key */
    const char *delimiter;         /* --side-delimiter (default ",") */
    char multi_sep;                /* --multi-sep (default '|') */
};

void import_side_read(const struct import_side *s, struct import_join *j,
                      struct import_features *out);
void import_ml_items(const char *path, struct import_join *j, struct import_features *out);
void import_ml_users(const char *path, struct import_join *j, struct import_features *out);

#endif
