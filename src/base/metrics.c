/* metrics: JSON-lines writer; see metrics.h. Keys and string values are
 * ours (no escaping needed beyond quotes, which they never contain). */
#include "base/metrics.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "base/log.h"

int metrics_open(const char *path, int append, FILE **f, char *err, size_t len)
{
    *f = NULL;
    if (!path || !path[0])
        return 0;
    *f = fopen(path, append ? "a" : "w");
    if (!*f)
        return errorf(err, len, "output.metrics = %s: cannot open for writing: %s", path,
                      strerror(errno));
    return 0;
}

static void add(struct metrics_line *l, const char *key, const char *val)
{
    int n = snprintf(l->buf + l->len, sizeof l->buf - l->len, "%s\"%s\":%s",
                     l->len > 1 ? "," : "", key, val);
    if (n > 0 && l->len + (size_t)n < sizeof l->buf)
        l->len += (size_t)n;
}

void metrics_begin(struct metrics_line *l, const char *event)
{
    l->buf[0] = '{';
    l->buf[1] = '\0';
    l->len = 1;
    metrics_str(l, "event", event);
}

void metrics_int(struct metrics_line *l, const char *key, int64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)v);
    add(l, key, s);
}

void metrics_num(struct metrics_line *l, const char *key, double v)
{
    char s[40];
    if (isfinite(v))
        snprintf(s, sizeof s, "%.9g", v);
    else
        snprintf(s, sizeof s, "null"); /* JSON has no NaN */
    add(l, key, s);
}

void metrics_num_exact(struct metrics_line *l, const char *key, double v)
{
    char s[40];
    if (isfinite(v))
        snprintf(s, sizeof s, "%.17g", v);
    else
        snprintf(s, sizeof s, "null");
    add(l, key, s);
}

void metrics_str(struct metrics_line *l, const char *key, const char *v)
{
    char s[256];
    snprintf(s, sizeof s, "\"%s\"", v);
    add(l, key, s);
}

void metrics_end(struct metrics_line *l, FILE *f)
{
    if (!f)
        return;
    fprintf(f, "%s}\n", l->buf);
    fflush(f);
}
