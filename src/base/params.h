/* params: parameter files (INI via inih), command-line overrides, validation
 * against the table in params_table.h, serialization (for the broadcast,
 * comm/comm_params.h), help and dump.
 *
 * Errors are returned as text "FILE:LINE: message" (or "command line: ...")
 * so that callers and tests can inspect them; the program passes them to
 * fatal(). */
#ifndef FS_PARAMS_H
#define FS_PARAMS_H

#include <stdint.h>
#include <stdio.h>

enum param_type { PT_INT, PT_FLOAT, PT_BOOL, PT_CHOICE, PT_STRING };

#define X(sec, key, type, def, lo, hi, choices, help) P_##sec##_##key,
enum param_id {
#include "base/params_table.h"
    P_COUNT
};
#undef X

struct param_def {
    const char *section, *key;
    enum param_type type;
    const char *def;
    double min, max;
    const char *choices;
    const char *help;
};

#define PARAM_STR_MAX 1024
#define PARAM_ERR_MAX 1536

union param_value {
    int64_t i; /* INT, BOOL (0/1), CHOICE (index into choices) */
    double f;
};

struct params {
    union param_value v[P_COUNT];
    char str[P_COUNT][PARAM_STR_MAX]; /* text form of every value */
    char origin[P_COUNT][PARAM_STR_MAX]; /* "" default, "FILE:LINE" or "command line" */
};

extern const struct param_def param_defs[P_COUNT];

void params_defaults(struct params *p);
/* Read an INI file over p. Returns 0, or -1 with err = "FILE:LINE: ...". */
int params_read_file(struct params *p, const char *path, char *err, size_t errlen);
/* Apply one "section.key=value" override. */
int params_override(struct params *p, const char *arg, const char *origin, char *err,
                    size_t errlen);
/* Set one parameter from text (validates); origin is recorded. */
int params_set(struct params *p, const char *section, const char *key, const char *value,
               const char *where, char *err, size_t errlen);
/* A check's error about p's values (err: "section.key = ... needs ...")
 * in the parse errors' form: prefixed with where the first parameter it
 * names that was set came from ("command line: ", "FILE:LINE: "), unless
 * it names none or is prefixed already. */
void params_locate(const struct params *p, char *err, size_t errlen);
/* A job's parameters, read by rank 0 and broadcast: comm/comm_params.h. */

static inline int64_t params_i64(const struct params *p, enum param_id id) { return p->v[id].i; }
static inline double params_f64(const struct params *p, enum param_id id) { return p->v[id].f; }
static inline const char *params_str(const struct params *p, enum param_id id)
{
    return p->str[id];
}

void params_dump(const struct params *p, FILE *out);  /* effective parameters, as INI */
/* The effective parameters as one line of the metrics file (JSON):
 * {"event":"params","params":{"section.key":"value",...}} */
void params_json(const struct params *p, FILE *out);
void params_help(FILE *out);                          /* the whole table */
/* "section.key=value\n" lines of every parameter (heap string). */
char *params_serialize(const struct params *p);

#endif
