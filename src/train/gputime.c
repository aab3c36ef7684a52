/* gputime: device-side phase timers; see gputime.h. */
#include "train/gputime.h"

#include <string.h>

#include "base/log.h"

void gputime_init(struct gputime *g, const struct backend_ops *be)
{
    memset(g, 0, sizeof *g);
    if (!be->event_new)
        return;
    g->be = be;
    for (int c = 0; c < 2; c++) {
        for (int p = 0; p < GPU_NPHASES; p++)
            for (int s = 0; s < GPU_SPANS; s++)
                for (int k = 0; k < 2; k++)
                    g->ev[c][p][s][k] = be->event_new(1);
        for (int w = 0; w < GPU_WAITS; w++)
            for (int k = 0; k < 2; k++)
                g->wev[c][w][k] = be->event_new(1);
    }
}

void gputime_free(struct gputime *g)
{
    if (g->be)
        for (int c = 0; c < 2; c++) {
            for (int p = 0; p < GPU_NPHASES; p++)
                for (int s = 0; s < GPU_SPANS; s++)
                    for (int k = 0; k < 2; k++)
                        g->be->event_free(g->ev[c][p][s][k]);
            for (int w = 0; w < GPU_WAITS; w++)
                for (int k = 0; k < 2; k++)
                    g->be->event_free(g->wev[c][w][k]);
        }
    memset(g, 0, sizeof *g);
}

void gputime_begin(struct gputime *g, enum gpu_phase ph)
{
    const int c = g->cur;
    if (!g->be || g->spans[c][ph] == GPU_SPANS)
        return;
    if (g->open)
        fatal("gputime: phase %s begun inside another", gputime_name(ph));
    g->be->event_record(g->ev[c][ph][g->spans[c][ph]][0], BACKEND_COMPUTE);
    g->open = 1;
    g->phase = (int)ph;
}

void gputime_end(struct gputime *g, enum gpu_phase ph)
{
    const int c = g->cur;
    if (!g->be || g->spans[c][ph] == GPU_SPANS)
        return;
    if (g->in_wait)
        fatal("gputime: phase %s ended inside a host wait", gputime_name(ph));
    g->be->event_record(g->ev[c][ph][g->spans[c][ph]][1], BACKEND_COMPUTE);
    g->spans[c][ph]++;
    g->open = 0;
}

void gputime_wait(struct gputime *g, int begin)
{
    const int c = g->cur;
    if (!g->be)
        return;
    if (begin) {
        if (!g->open || g->in_wait || g->waits[c] == GPU_WAITS)
            return; /* outside the spans, nested, or past the bound: not subtracted */
        g->be->event_record(g->wev[c][g->waits[c]][0], BACKEND_COMPUTE);
        g->wph[c][g->waits[c]] = g->phase;
        g->in_wait = 1;
    } else if (g->in_wait) {
        g->be->event_record(g->wev[c][g->waits[c]][1], BACKEND_COMPUTE);
        g->waits[c]++;
        g->in_wait = 0;
    }
}

void gputime_wait_hook(void *g, int begin) { gputime_wait(g, begin); }

/* 1 when set c's events have all completed; with wait, waits for those
 * that have not (the host waits: counted by the backend). */
static int set_done(struct gputime *g, int c, int wait)
{
    const struct backend_ops *be = g->be;
    for (int p = 0; p < GPU_NPHASES; p++)
        for (int s = 0; s < g->spans[c][p]; s++)
            for (int k = 0; k < 2; k++)
                if (!be->event_query(g->ev[c][p][s][k])) {
                    if (!wait)
                        return 0;
                    be->event_sync(g->ev[c][p][s][k]);
                }
    for (int w = 0; w < g->waits[c]; w++)
        for (int k = 0; k < 2; k++)
            if (!be->event_query(g->wev[c][w][k])) {
                if (!wait)
                    return 0;
                be->event_sync(g->wev[c][w][k]);
            }
    return 1;
}

/* Set c's step (its events complete) into the interval's figures. */
static void read_set(struct gputime *g, int c, double wall_ms)
{
    for (int p = 0; p < GPU_NPHASES; p++) {
        for (int s = 0; s < g->spans[c][p]; s++)
            g->ms[p] += g->be->event_ms(g->ev[c][p][s][0], g->ev[c][p][s][1]);
        g->spans[c][p] = 0;
    }
    for (int w = 0; w < g->waits[c]; w++) /* the compute stream's idle time in the waits */
        g->ms[g->wph[c][w]] -= g->be->event_ms(g->wev[c][w][0], g->wev[c][w][1]);
    g->waits[c] = 0;
    g->wall_ms += wall_ms;
    g->steps++;
}

void gputime_step(struct gputime *g, double wall_s)
{
    if (!g->be)
        return;
    const int c = g->cur;
    if (g->pend) { /* the step before's, recorded a whole step ago */
        set_done(g, !c, 1);
        read_set(g, !c, g->pend_wall_ms);
        g->pend = 0;
    }
    if (set_done(g, c, 0)) {
        read_set(g, c, 1e3 * wall_s);
        return;
    }
    g->pend = 1; /* read at the next step's end; the next step records into the other set */
    g->pend_wall_ms = 1e3 * wall_s;
    g->cur = !c;
}

int gputime_take(struct gputime *g, double ms[GPU_NPHASES], double *gpu_ms, double *busy)
{
    const double n = g->steps > 0 ? (double)g->steps : 1;
    *gpu_ms = 0;
    for (int p = 0; p < GPU_NPHASES; p++) {
        ms[p] = g->ms[p] / n;
        *gpu_ms += ms[p];
        g->ms[p] = 0;
    }
    *busy = g->wall_ms > 0 ? *gpu_ms * n / g->wall_ms : 0;
    g->wall_ms = 0;
    g->steps = 0;
    return g->be != NULL;
}

const char *gputime_name(enum gpu_phase ph)
{
    static const char *names[GPU_NPHASES] = {"forward", "backward", "exchange", "optimizer"};
    return names[ph];
}
