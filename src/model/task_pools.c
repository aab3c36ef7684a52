/* task_pools: data.pools (the pools of event kinds that ranking's
 * histories are built from, data/pools.h) from the parameters and the
 * dataset; see task.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "data/pools.h"
#include "model/task.h"

/* One entry NAME:COLUMN[OP X] of data.pools into pool k of pc. */
static int parse_pool(const char *text, const char *entry, size_t n, struct pool_conf *pc, int k,
                      char *err, size_t errlen)
{
    char buf[256];
    const char *s = entry;
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    const char *colon = memchr(s, ':', n);
    struct task_spec t = {.kind = TASK_BINARY};
    if (n >= sizeof buf || !colon || (size_t)(colon - s) >= sizeof pc->name[k] ||
        colon == s)
        return errorf(err, errlen, "data.pools = %s: '%.*s' is not NAME:COLUMN[OP X] (e.g. "
                      "listen_plus:played_ratio>=50)", text, (int)n, s);
    memcpy(pc->name[k], s, (size_t)(colon - s));
    pc->name[k][colon - s] = 0;
    snprintf(buf, sizeof buf, "%.*s", (int)(n - (size_t)(colon - s) - 1), colon + 1);
    for (const char *c = pc->name[k]; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-'))
            return errorf(err, errlen, "data.pools = %s: pool name '%s' is not of letters, "
                          "digits, '_' and '-'", text, pc->name[k]);
    if (task_expr_parse(buf, &t))
        return errorf(err, errlen, "data.pools = %s: pool %s: '%s' is not COLUMN, or COLUMN OP "
                      "X with OP one of >= > <= < == != and X a number (e.g. played_ratio>=50), or == "
                      "and != with the name of a categorical column's value (event_type==like)",
                      text, pc->name[k], buf);
    for (int i = 0; i < k; i++)
        if (!strcmp(pc->name[i], pc->name[k]))
            return errorf(err, errlen, "data.pools = %s: pool '%s' is defined twice", text,
                          pc->name[k]);
    snprintf(pc->text[k], sizeof pc->text[k], "%s", t.column);
    struct label_col *c = &pc->lc.c[k];
    c->op = t.op;
    c->x = t.x;
    static const char *ops[] = {"", "", ">=", ">", "<=", "<", "==", "!="};
    const size_t at = strlen(pc->text[k]);
    snprintf(pc->word[k], sizeof pc->word[k], "%s", t.word);
    if (t.word[0])
        snprintf(pc->text[k] + at, sizeof pc->text[k] - at, " %s %s", ops[t.op], t.word);
    else if (t.op != LOP_NONZERO)
        snprintf(pc->text[k] + at, sizeof pc->text[k] - at, " %s %g", ops[t.op], t.x);
    else
        snprintf(pc->text[k] + at, sizeof pc->text[k] - at, " != 0");
    snprintf(pc->column[k], sizeof pc->column[k], "%s", t.column);
    return 0;
}

int task_pools_parse(const char *text, struct task_conf *tc, char *err, size_t errlen)
{
    tc->pools = NULL;
    tc->labels.pools = NULL;
    if (!text[0])
        return 0;
    struct pool_conf *pc = xcalloc(1, sizeof *pc);
    for (const char *p = text; *p;) {
        const size_t n = strcspn(p, ",");
        if (pc->n == POOLS_MAX) {
            free(pc);
            return errorf(err, errlen, "data.pools = %s: more than %d pools", text, POOLS_MAX);
        }
        if (parse_pool(text, p, n, pc, pc->n, err, errlen)) {
            free(pc);
            return -1;
        }
        pc->n++;
        p += n + (p[n] == ',');
    }
    if (!pc->n) {
        free(pc);
        return errorf(err, errlen, "data.pools = %s: no pool (NAME:COLUMN[OP X], ...)", text);
    }
    pc->lc.n = pc->n;
    tc->pools = pc;
    tc->labels.pools = pc;
    return 0;
}

int task_pools_resolve(struct task_conf *tc, const struct dataset *ds, char *err, size_t errlen)
{
    struct pool_conf *pc = tc->pools;
    if (!pc)
        return 0;
    for (int k = 0; k < pc->n; k++) {
        const struct dataset_feature *f = dataset_feat_find(ds, DS_EVENTS, pc->column[k]);
        if (!f) {
            char list[1024];
            task_event_columns(ds, list, sizeof list);
            return errorf(err, errlen, "data.pools: pool %s: %s has no /events/%s (its event "
                          "columns: %s; data import --event-cols keeps them)", pc->name[k],
                          ds->path, pc->column[k], list);
        }
        struct label_col *c = &pc->lc.c[k];
        c->f = f;
        free(pc->decode[k]); /* a window file: resolved again */
        pc->decode[k] = NULL;
        c->decode = NULL;
        if (f->is_float && pc->word[k][0])
            return errorf(err, errlen, "data.pools: pool %s: '%s' is a word and /events/%s of "
                          "%s a float column: a word compares with a categorical column's "
                          "value names", pc->name[k], pc->word[k], pc->column[k], ds->path);
        if (!f->is_float) {
            char what[96];
            snprintf(what, sizeof what, "data.pools: pool %s", pc->name[k]);
            if (task_column_decode(ds, f, what, pc->word[k], &pc->decode[k], err, errlen))
                return -1;
            c->decode = pc->decode[k];
        }
    }
    return 0;
}

void task_pools_describe(const struct pool_conf *pc, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int k = 0; k < pc->n && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s: %s", k ? ", " : "", pc->name[k],
                               pc->text[k]);
}
