/* steptime: phase timers, bubble accounting and trace; see steptime.h. */
#include "train/steptime.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/clock.h"
#include "comm/comm_trace.h"
#include "train/watchdog.h"

const char *phase_name(enum phase ph)
{
    static const char *names[PH_COUNT] = {"read", "plan", "input_dist", "lookup", "forward",
                                          "backward", "grad_exchange", "allreduce", "optimizer",
                                          "kv_wait", "prefetch", "late_fetch"};
    return names[ph];
}

void steptime_init(struct steptime *st, int64_t interval, int64_t trace_steps)
{
    memset(st, 0, sizeof *st);
    st->cap = interval;
    st->dur = xcalloc((size_t)interval, sizeof *st->dur);
    st->busy = xcalloc((size_t)interval, sizeof *st->busy);
    st->cost = xcalloc((size_t)interval, sizeof *st->cost);
    st->trace_left = trace_steps;
}

void steptime_free(struct steptime *st)
{
    free(st->dur);
    free(st->busy);
    free(st->cost);
    free(st->cpu_busy);
    free(st->trace);
    memset(st, 0, sizeof *st);
}

void steptime_time_cpu(struct steptime *st)
{
    st->cpu = 1;
    if (!st->cpu_busy)
        st->cpu_busy = xcalloc((size_t)(st->cap ? st->cap : 1), sizeof *st->cpu_busy);
    comm_time_cpu(1);
}

void steptime_begin(struct steptime *st)
{
    if (st->cpu) {
        st->cpu_start = clock_thread_seconds();
        st->mpi_cpu_start = comm_mpi_cpu_seconds();
    }
    st->step_start = st->mark = clock_seconds();
    st->mpi_start = st->mpi_mark = comm_mpi_seconds();
    st->hidden_start = comm_hidden_seconds();
    watchdog_beat("at", "the start of the step");
    if (st->trace_left > 0 && st->trace_origin == 0)
        st->trace_origin = st->step_start;
    if (st->trace_peers)
        comm_trace_enable(st->trace_left > 0);
}

void steptime_phase(struct steptime *st, enum phase ph)
{
    double now = clock_seconds();
    watchdog_beat("after phase", phase_name(ph));
    st->t[ph] += now - st->mark;
    const double mpi = comm_mpi_seconds();
    st->w[ph] += mpi - st->mpi_mark;
    st->mpi_mark = mpi;
    if (st->trace_left > 0) {
        if (st->trace_n == st->trace_cap) {
            st->trace_cap = st->trace_cap ? 2 * st->trace_cap : 256;
            st->trace = xrealloc(st->trace, (size_t)st->trace_cap * 3 * sizeof *st->trace);
        }
        double *e = st->trace + 3 * st->trace_n++;
        e[0] = ph;
        e[1] = 1e6 * (st->mark - st->trace_origin);
        e[2] = 1e6 * (now - st->mark);
    }
    st->mark = now;
}

void steptime_end(struct steptime *st, double cost)
{
    double dur = clock_seconds() - st->step_start;
    double wait = comm_mpi_seconds() - st->mpi_start;
    st->exposed += wait;
    st->hidden += comm_hidden_seconds() - st->hidden_start;
    if (st->k < st->cap) {
        st->dur[st->k] = dur;
        st->busy[st->k] = dur - wait > 0 ? dur - wait : 0;
        st->cost[st->k] = cost;
        if (st->cpu) {
            double cpu = clock_thread_seconds() - st->cpu_start -
                         (comm_mpi_cpu_seconds() - st->mpi_cpu_start);
            st->cpu_busy[st->k] = cpu > 0 ? cpu : 0;
        }
        st->k++;
    }
    if (st->trace_left > 0)
        st->trace_left--;
    if (st->trace_peers && st->trace_left == 0)
        comm_trace_enable(0);
}

void steptime_collect(struct steptime *st, struct comm *c, struct step_stats *out)
{
    const int P = c->size;
    const int64_t k = st->k; /* every rank records the same steps */
    /* one record per rank: k x (dur, busy, cost), phase sums, exposed,
     * hidden, the phases' waits, and with cpu k busy CPU times */
    const int64_t n = 3 * k + 2 * PH_COUNT + 2 + (st->cpu ? k : 0);
    double *mine = xcalloc((size_t)n, sizeof *mine), *all = xmalloc((size_t)(n * P) * sizeof *all);
    for (int64_t s = 0; s < st->k; s++) {
        mine[3 * s] = st->dur[s];
        mine[3 * s + 1] = st->busy[s];
        mine[3 * s + 2] = st->cost[s];
    }
    const int64_t cpu_at = 3 * k + 2 * PH_COUNT + 2; /* the busy CPU times */
    if (st->cpu)
        memcpy(mine + cpu_at, st->cpu_busy, (size_t)k * sizeof *mine);
    memcpy(mine + 3 * k, st->t, sizeof st->t);
    mine[3 * k + PH_COUNT] = st->exposed;
    mine[3 * k + PH_COUNT + 1] = st->hidden;
    memcpy(mine + 3 * k + PH_COUNT + 2, st->w, sizeof st->w);
    int64_t *counts = xmalloc((size_t)P * sizeof *counts);
    for (int r = 0; r < P; r++)
        counts[r] = n;
    comm_allgatherv(c, COMM_WORLD, COMM_F64, mine, n, all, counts, COMM_PH_OTHER);
    memset(out, 0, offsetof(struct step_stats, tau));
    double wait = 0;
    for (int64_t s = 0; s < k; s++) {
        double T = 0, sum = 0, mx = 0;
        for (int r = 0; r < P; r++) {
            const double *e = all + r * n + 3 * s;
            T = e[0] > T ? e[0] : T;
            sum += e[1];
            mx = e[1] > mx ? e[1] : mx;
            wait += e[0] - e[1];
        }
        double b = 0;
        for (int r = 0; r < P; r++)
            b += T - all[r * n + 3 * s + 1];
        out->bubble += T > 0 ? b / (P * T) : 0;
        out->steps_s += T;
        out->imbalance += sum > 0 ? mx / (sum / P) : 1;
    }
    if (k > 0) {
        out->bubble /= (double)k;
        out->imbalance /= (double)k;
        out->wait_ms = 1e3 * wait / (double)(k * P);
    }
    for (int ph = 0; ph < PH_COUNT; ph++) {
        double sum = 0;
        for (int r = 0; r < P; r++)
            sum += all[r * n + 3 * k + ph];
        out->phase_ms[ph] = k > 0 ? 1e3 * sum / (double)(k * P) : 0;
        double w = 0;
        for (int r = 0; r < P; r++)
            w += all[r * n + 3 * k + PH_COUNT + 2 + ph];
        out->phase_wait_ms[ph] = k > 0 ? 1e3 * w / (double)(k * P) : 0;
    }
    double exposed = 0, hidden = 0;
    for (int r = 0; r < P; r++) {
        exposed += all[r * n + 3 * k + PH_COUNT];
        hidden += all[r * n + 3 * k + PH_COUNT + 1];
    }
    out->overlap = hidden + exposed > 0 ? hidden / (hidden + exposed) : 0;
    /* busy seconds per unit of cost of every rank, over the interval */
    if (!out->tau) {
        out->tau = xcalloc((size_t)P, sizeof *out->tau);
        out->cost_sum = xcalloc((size_t)P, sizeof *out->cost_sum);
    }
    if (st->cpu && !out->tau_cpu)
        out->tau_cpu = xcalloc((size_t)P, sizeof *out->tau_cpu);
    for (int r = 0; r < P; r++) {
        double busy = 0, cost = 0, cpu = 0;
        for (int64_t s = 0; s < k; s++) {
            busy += all[r * n + 3 * s + 1];
            cost += all[r * n + 3 * s + 2];
            cpu += st->cpu ? all[r * n + cpu_at + s] : 0;
        }
        out->tau[r] = cost > 0 ? busy / cost : 0;
        out->cost_sum[r] = cost;
        if (st->cpu)
            out->tau_cpu[r] = cost > 0 ? cpu / cost : 0;
    }
    free(mine);
    free(all);
    free(counts);
    st->k = 0;
    memset(st->t, 0, sizeof st->t);
    memset(st->w, 0, sizeof st->w);
    st->exposed = st->hidden = 0;
}

int steptime_trace_write(struct steptime *st, struct comm *c, const char *path, int force)
{
    if (!path[0] || st->trace_origin < 0 || (st->trace_left > 0 && !force))
        return 0;
    const int P = c->size;
    int64_t *counts = xmalloc((size_t)P * sizeof *counts);
    comm_allgather_i64(c, COMM_WORLD, 3 * st->trace_n, counts);
    int64_t total = 0;
    for (int r = 0; r < P; r++)
        total += counts[r];
    double *all = xmalloc((size_t)(total ? total : 1) * sizeof *all);
    comm_allgatherv(c, COMM_WORLD, COMM_F64, st->trace, 3 * st->trace_n, all, counts,
                    COMM_PH_OTHER);
    double *pev = NULL, *origins = NULL;
    int64_t npev = 0;
    if (st->trace_peers) {
        comm_trace_enable(0);
        npev = comm_trace_gather(c, st->trace_origin, &pev, &origins);
    }
    st->trace_origin = -1; /* written once */
    st->trace_left = 0;
    if (c->rank == 0) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f)
            fatal("output.trace = %s: cannot write %s: %s", path, tmp, strerror(errno));
        fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
        int first = 1;
        for (int r = 0; r < P; r++) { /* node: its first rank; origin: clock_seconds() */
            fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,"
                       "\"args\":{\"name\":\"rank %d\",\"node\":%d",
                    first ? (first = 0, "") : ",\n", r, r, c->node_of ? c->node_of[r] : 0);
            if (origins)
                fprintf(f, ",\"origin_s\":%.9f", origins[r]);
            fprintf(f, "}}");
        }
        int64_t off = 0;
        for (int r = 0; r < P; r++) {
            for (int64_t i = 0; i < counts[r]; i += 3) {
                const double *e = all + off + i;
                fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"phase\",\"ph\":\"X\",\"pid\":0,"
                           "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                        phase_name((enum phase)(int)e[0]), r, e[1], e[2]);
            }
            off += counts[r];
        }
        for (int64_t i = 0; i < npev; i++) { /* per peer: instants on the rank's track */
            const double *e = pev + i * COMM_TRACE_FIELDS;
            const char *kind = comm_trace_kind_name((int)e[4]);
            const char *ev = comm_trace_ev_name((enum comm_trace_ev)(int)e[1]);
            fprintf(f, ",\n{\"name\":\"%s %s\",\"cat\":\"peer\",\"ph\":\"i\",\"s\":\"t\","
                       "\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"args\":{\"ev\":\"%s\",\"kind\":\"%s\","
                       "\"table\":%d,\"peer\":%d,\"bytes\":%.0f}}",
                    kind, ev, (int)e[0], e[2], ev, kind, (int)e[3], (int)e[5], e[6]);
        }
        fprintf(f, "\n]}\n");
        if (fclose(f) != 0 || rename(tmp, path) != 0) {
            unlink(tmp);
            fatal("output.trace = %s: cannot write: %s", path, strerror(errno));
        }
    }
    free(pev);
    free(origins);
    free(all);
    free(counts);
    return 1;
}
