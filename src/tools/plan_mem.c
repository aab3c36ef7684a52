/* plan_mem: the memory model of 'freescale plan --memory'; see plan_mem.h. */
#include "tools/plan_mem.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/emb_optim.h"
#include "base/check.h"
#include "base/log.h"
#include "base/params.h"
#include "embedding/emb_table.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

/* One entry NAME:ROWS[:DIM][:dyn] (its text in e, n bytes). */
static void parse_one(struct plan_table *t, const char *e, size_t n)
{
    char buf[256];
    if (n == 0 || n >= sizeof buf)
        fatal("plan: --tables: entry '%.*s' is not NAME:ROWS[:DIM][:dyn]", (int)n, e);
    memcpy(buf, e, n);
    buf[n] = 0;
    memset(t, 0, sizeof *t);
    char *f[4];
    int nf = 0;
    for (char *s = buf, *c; nf < 4; s = c + 1) {
        f[nf++] = s;
        if (!(c = strchr(s, ':')))
            break;
        *c = 0;
        if (nf == 4)
            fatal("plan: --tables: entry '%.*s' has more than four fields "
                  "(NAME:ROWS[:DIM][:dyn])", (int)n, e);
    }
    if (nf < 2 || !f[0][0] || strlen(f[0]) >= sizeof t->name)
        fatal("plan: --tables: entry '%.*s' is not NAME:ROWS[:DIM][:dyn]", (int)n, e);
    snprintf(t->name, sizeof t->name, "%s", f[0]);
    char *end;
    errno = 0;
    t->rows = strtod(f[1], &end);
    if (errno || end == f[1] || *end || !(t->rows >= 1) || t->rows > 1e15 ||
        t->rows != floor(t->rows))
        fatal("plan: --tables: '%s' in entry '%.*s': the rows must be a whole number in "
              "1 .. 1e15 (1e8 is accepted)", f[1], (int)n, e);
    for (int i = 2; i < nf; i++) {
        if (!strcmp(f[i], "dyn")) {
            t->dyn = 1;
            continue;
        }
        long d = strtol(f[i], &end, 10);
        if (i != 2 || end == f[i] || *end || d < 1 || d > 65536)
            fatal("plan: --tables: '%s' in entry '%.*s' is neither a dimension (1 .. 65536, "
                  "third field) nor 'dyn'", f[i], (int)n, e);
        t->dim = (int)d;
    }
}

void plan_mem_parse_tables(struct plan_mem *pm, const char *spec)
{
    plan_mem_free(pm);
    int n = 1;
    for (const char *s = spec; *s; s++)
        n += *s == ',';
    pm->t = xcalloc((size_t)n, sizeof *pm->t);
    for (const char *s = spec;;) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        parse_one(&pm->t[pm->nt++], s, len);
        if (!c)
            break;
        s = c + 1;
    }
}

void plan_mem_free(struct plan_mem *pm)
{
    free(pm->t);
    pm->t = NULL;
    pm->nt = 0;
}

/* Entries of a comma-separated list (0 for an empty one). */
static int list_count(const char *s)
{
    int n = 0, in = 0;
    for (; *s; s++) {
        if (*s == ',')
            in = 0;
        else if (*s != ' ' && !in) {
            in = 1;
            n++;
        }
    }
    return n;
}

double plan_mem_tokens_per_seq(const struct params *p)
{
    const double N = (double)params_i64(p, P_data_max_seq_len);
    const int ranking = !strcmp(params_str(p, P_train_task), "ranking");
    const int inter = ranking && !strcmp(params_str(p, P_model_actions), "interleave");
    return (inter ? 2.0 * N : N) + (double)list_count(params_str(p, P_features_user));
}

double plan_mem_workspace_bytes(const struct params *p, int64_t B, double T)
{
    const double d = (double)params_i64(p, P_model_dim), L = (double)params_i64(p, P_model_layers);
    const double cap = floor(T) + floor(floor(T) / 4); /* model_hstu.c's grown(T, 0) */
    const double capb = (double)B + floor((double)B / 4);
    const double layer = 13.0 * d * 4.0 + 16.0 + d;        /* x n pre h a o z, stats, mask */
    const double beside = 12.0 * d * 4.0 + d + 32.0;       /* xl y dx dz dob da dh dn tmp ... */
    return cap * (L * layer + beside) + (capb + 1) * 8.0; /* offsets */
}

/* Bytes of one table's shard on a rank of G shards: ceil(rows / G) + 1
 * slots (emb_shard_bytes). */
static double shard_bytes(const struct plan_table *t, int dim, enum emb_optimizer kind, int64_t G)
{
    return emb_shard_bytes(ceil(t->rows / (double)G) + 1, dim, kind, t->dyn);
}

void plan_mem_print(const struct plan_mem *pm, const struct params *p, const int *ranks,
                    int nranks, int64_t per_rank, double dense_floats, int64_t num_items)
{
    const int dim = (int)params_i64(p, P_model_dim);
    struct plan_table item = {.rows = (double)num_items, .dim = dim,
                              .dyn = params_i64(p, P_embedding_dynamic) != 0};
    snprintf(item.name, sizeof item.name, "item");
    const struct plan_table *t = pm->nt ? pm->t : &item;
    const int nt = pm->nt ? pm->nt : 1;
    if (!pm->nt && num_items <= 0)
        fatal("plan: --memory needs the tables: --tables NAME:ROWS[:DIM][:dyn],... or "
              "data.path (its items: the item table)");
    const enum emb_optimizer kind =
        (enum emb_optimizer)emb_optim_parse(params_str(p, P_embedding_optimizer));
    const double tok = plan_mem_tokens_per_seq(p);
    const double ws = plan_mem_workspace_bytes(p, per_rank, (double)per_rank * tok);
    const double dense = 16.0 * dense_floats;
    const int64_t group = params_i64(p, P_parallel_embedding_group);
    double rows = 0;
    for (int i = 0; i < nt; i++)
        rows += t[i].rows;
    double top = 0; /* the unit: MiB below 1 GiB */
    for (int r = 0; r < nranks; r++) {
        const int64_t G = group > 0 ? group : ranks[r];
        double tb = 0;
        for (int i = 0; i < nt; i++)
            tb += shard_bytes(&t[i], t[i].dim ? t[i].dim : dim, kind, G);
        top = fmax(top, tb + dense + ws);
    }
    const double unit = top < GIB ? MIB : GIB;
    printf("\nmemory per rank (%s; fp32, embedding.optimizer = %s; %d table%s, %.4g rows in "
           "all; dense: weights, gradients and Adam's moments of %.4g floats; workspace: the "
           "HSTU's buffers for %lld sequences of %.0f tokens):\n",
           unit == GIB ? "GiB" : "MiB", params_str(p, P_embedding_optimizer), nt, nt == 1 ? "" : "s", rows, dense_floats,
           (long long)per_rank, tok);
    printf("%7s %12s %10s %10s %10s\n", "ranks", "tables", "dense", "workspace", "total");
    for (int r = 0; r < nranks; r++) {
        const int64_t G = group > 0 ? group : ranks[r];
        double tb = 0;
        for (int i = 0; i < nt; i++)
            tb += shard_bytes(&t[i], t[i].dim ? t[i].dim : dim, kind, G);
        printf("%7d %12.3f %10.3f %10.3f %10.3f\n", ranks[r], tb / unit, dense / unit,
               ws / unit, (tb + dense + ws) / unit);
    }
    printf("(tables: each sharded over %s, ceil(rows / G) + 1 rows a shard with the optimizer's "
           "state, dynamic ones (:dyn) with their statistics and index; not counted: the "
           "loss's, the head's and the exchange's buffers, the allocator's and the runtime's)\n",
           group > 0 ? "parallel.embedding_group ranks" : "all ranks");
}
