/* import_priv: what the readers of 'freescale data import' share
 * (import_read.c, import_csv.c, import_jsonl.c); not for other modules. */
#ifndef FS_IMPORT_PRIV_H
#define FS_IMPORT_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "tools/import_input.h"
#include "tools/import_read.h"

/* One id as read: the integer i, or the string s[0 .. len). */
struct import_key {
    const char *s;
    size_t len;
    int64_t i;
};

struct reader {
    const char *path;               /* for messages */
    const struct import_options *o;
    struct import_events *ev;
    int has_rating, has_time;       /* the input has these columns */
    int in_header;                  /* csv header not read yet: errors are fatal */
};

/* A malformed line: fatal "PATH:LINE: msg", or counted and (first few)
 * warned about with skip_bad. */
void import_bad_line(struct reader *r, int64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The text of a field. */
struct import_text {
    const char *s;
    size_t len;
};

/* One valid row (rating / ts ignored when the input has none; ev: the
 * text of the event columns [o->nevcols], NULL without; an empty text is a
 * missing categorical value). Returns 0, or -1 after reporting a bad row
 * (a rating out of range, an event column that is not a number). */
int import_add_event(struct reader *r, int64_t line, const struct import_key *user,
                     const struct import_key *item, double rating, int64_t ts,
                     const struct import_text *ev);

/* Decimal int64 / finite number in s[0 .. len), spaces around allowed: 0 or -1. */
int import_parse_i64(const char *s, size_t len, int64_t *out);
int import_parse_f64(const char *s, size_t len, double *out);
/* Is s[0 .. len) only spaces, tabs and line ends? */
int import_blank(const char *s, size_t len);
/* A value for a message: at most 40 bytes, unprintables as '?'. */
const char *import_shown(char *buf, size_t buflen, const char *s, size_t len);

/* The text s[0 .. len) of column c (IMPORT_USER .. IMPORT_TIME), named name
 * in messages, as a key (ids: integer or, per the options, string), rating
 * or time. 0, or -1 with the reason in err (no "PATH:LINE:"). */
int import_field(const struct reader *r, int c, const char *name, const char *s, size_t len,
                 struct import_key *key, double *rating, int64_t *ts, char *err, size_t errlen);

/* The readers behind import_read() (in->line counts the lines). */
void import_read_csv(struct reader *r, struct import_input *in);
void import_read_jsonl(struct reader *r, struct import_input *in);

#endif
