/* comm_trace: the per-peer trace of labelled transfers; see comm_trace.h. */
#include "comm/comm_trace.h"

#include <mpi.h>
#include <stdlib.h>

#include "base/check.h"
#include "base/clock.h"
#include "comm/comm_priv.h"

struct ct_event {
    double t;
    int ev, table, kind, peer; /* peer: world rank, -1 = every peer */
    int64_t bytes;
};

static struct {
    int on;
    int table, kind; /* the next post's label; kind -1 = none */
    const char *const *names;
    int nnames;
    struct ct_event *e;
    int64_t n, cap;
} g_ct = {.kind = -1};

/* per request of one labelled post */
struct comm_trace_msgs {
    int n, send, table, kind;
    int *peer;      /* [n] world ranks */
    int64_t *bytes; /* [n] */
};

void comm_trace_enable(int on) { g_ct.on = on; }
int comm_trace_on(void) { return g_ct.on; }

void comm_trace_kinds(const char *const *names, int n)
{
    g_ct.names = names;
    g_ct.nnames = n;
}

const char *comm_trace_kind_name(int kind)
{
    return kind >= 0 && kind < g_ct.nnames ? g_ct.names[kind] : "?";
}

const char *comm_trace_ev_name(enum comm_trace_ev ev)
{
    static const char *names[CT_NEV] = {"post_send", "post_recv", "done_send", "done_recv",
                                        "consumed"};
    return ev >= 0 && ev < CT_NEV ? names[ev] : "?";
}

void comm_trace_label(int table, int kind)
{
    g_ct.table = table;
    g_ct.kind = kind;
}

static void record(int ev, int table, int kind, int peer, int64_t bytes)
{
    if (g_ct.n == g_ct.cap) {
        g_ct.cap = g_ct.cap ? 2 * g_ct.cap : 1024;
        g_ct.e = xrealloc(g_ct.e, (size_t)g_ct.cap * sizeof *g_ct.e);
    }
    g_ct.e[g_ct.n++] = (struct ct_event){.t = clock_seconds(), .ev = ev, .table = table,
                                          .kind = kind, .peer = peer, .bytes = bytes};
}

void comm_trace_consumed(int table, int kind)
{
    if (g_ct.on)
        record(CT_CONSUMED, table, kind, -1, 0);
}

struct comm_trace_msgs *comm_trace_post(struct comm *c, int g, const struct comm_msg *m, int n,
                                        size_t elem, int send)
{
    const int kind = g_ct.kind;
    g_ct.kind = -1; /* one call's label */
    if (!g_ct.on || kind < 0 || n <= 0)
        return NULL;
    struct comm_trace_msgs *t = xmalloc(sizeof *t);
    *t = (struct comm_trace_msgs){.n = n, .send = send, .table = g_ct.table, .kind = kind};
    t->peer = xmalloc((size_t)n * sizeof *t->peer);
    t->bytes = xmalloc((size_t)n * sizeof *t->bytes);
    int *in = xmalloc((size_t)n * sizeof *in);
    for (int i = 0; i < n; i++) {
        in[i] = m[i].peer;
        t->bytes[i] = m[i].n * (int64_t)elem;
    }
    MPI_Group gg, wg;
    MPI_CHECK(MPI_Comm_group(*(MPI_Comm *)c->g[g].mpi, &gg));
    MPI_CHECK(MPI_Comm_group(*(MPI_Comm *)c->g[COMM_WORLD].mpi, &wg));
    MPI_CHECK(MPI_Group_translate_ranks(gg, n, in, wg, t->peer));
    MPI_CHECK(MPI_Group_free(&gg));
    MPI_CHECK(MPI_Group_free(&wg));
    free(in);
    for (int i = 0; i < n; i++)
        record(send ? CT_POST_SEND : CT_POST_RECV, t->table, kind, t->peer[i], t->bytes[i]);
    return t;
}

void comm_trace_done(struct comm_trace_msgs *t, int i)
{
    if (t && i >= 0 && i < t->n)
        record(t->send ? CT_DONE_SEND : CT_DONE_RECV, t->table, t->kind, t->peer[i],
               t->bytes[i]);
}

void comm_trace_free(struct comm_trace_msgs *t)
{
    if (!t)
        return;
    free(t->peer);
    free(t->bytes);
    free(t);
}

int64_t comm_trace_gather(struct comm *c, double origin, double **ev, double **origins)
{
    const int P = c->size;
    double *mine = xmalloc((size_t)(g_ct.n ? g_ct.n : 1) * COMM_TRACE_FIELDS * sizeof *mine);
    for (int64_t i = 0; i < g_ct.n; i++) {
        const struct ct_event *e = &g_ct.e[i];
        double *o = mine + i * COMM_TRACE_FIELDS;
        o[0] = c->rank;
        o[1] = e->ev;
        o[2] = 1e6 * (e->t - origin);
        o[3] = e->table;
        o[4] = e->kind;
        o[5] = e->peer;
        o[6] = (double)e->bytes;
    }
    int64_t *counts = xmalloc((size_t)P * sizeof *counts), total = 0;
    comm_allgather_i64(c, COMM_WORLD, g_ct.n * COMM_TRACE_FIELDS, counts);
    for (int r = 0; r < P; r++)
        total += counts[r];
    *ev = xmalloc((size_t)(total ? total : 1) * sizeof **ev);
    comm_allgatherv(c, COMM_WORLD, COMM_F64, mine, g_ct.n * COMM_TRACE_FIELDS, *ev, counts,
                    COMM_PH_OTHER);
    *origins = xmalloc((size_t)P * sizeof **origins);
    for (int r = 0; r < P; r++)
        counts[r] = 1;
    comm_allgatherv(c, COMM_WORLD, COMM_F64, &origin, 1, *origins, counts, COMM_PH_OTHER);
    free(counts);
    free(mine);
    g_ct.n = 0;
    return total / COMM_TRACE_FIELDS;
}
