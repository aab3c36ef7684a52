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
    for (int p = 0; p < GPU_NPHASES; p++)
        for (int s = 0; s < GPU_SPANS; s++)
            for (int k = 0; k < 2; k++)
                g->ev[p][s][k] = be->event_new(1);
    for (int w = 0; w < GPU_WAITS; w++)
        for (int k = 0; k < 2; k++)
            g->wev[w][k] = be->event_new(1);
}

void gputime_free(struct gputime *g)
{
    if (g->be)
        for (int p = 0; p < GPU_NPHASES; p++)
            for (int s = 0; s < GPU_SPANS; s++)
                for (int k = 0; k < 2; k++)
                    g->be->event_free(g->ev[p][s][k]);
    if (g->be)
        for (int w = 0; w < GPU_WAITS; w++)
            for (int k = 0; k < 2; k++)
                g->be->event_free(g->wev[w][k]);
    memset(g, 0, sizeof *g);
}

void gputime_begin(struct gputime *g, enum gpu_phase ph)
{
    if (!g->be || g->spans[ph] == GPU_SPANS)
        return;
    if (g->open)
        fatal("gputime: phase %s begun inside another", gputime_name(ph));
    g->be->event_record(g->ev[ph][g->spans[ph]][0], BACKEND_COMPUTE);
    g->open = 1;
    g->phase = (int)ph;
}

void gputime_end(struct gputime *g, enum gpu_phase ph)
{
    if (!g->be || g->spans[ph] == GPU_SPANS)
        return;
    if (g->in_wait)
        fatal("gputime: phase %s ended inside a host wait", gputime_name(ph));
    g->be->event_record(g->ev[ph][g->spans[ph]][1], BACKEND_COMPUTE);
    g->spans[ph]++;
    g->open = 0;
}

void gputime_wait(struct gputime *g, int begin)
{
    if (!g->be)
        return;
    if (begin) {
        if (!g->open || g->in_wait || g->waits == GPU_WAITS)
            return; /* outside the spans, nested, or past the bound: not subtracted */
        g->be->event_record(g->wev[g->waits][0], BACKEND_COMPUTE);
        g->wph[g->waits] = g->phase;
        g->in_wait = 1;
    } else if (g->in_wait) {
        g->be->event_record(g->wev[g->waits][1], BACKEND_COMPUTE);
        g->waits++;
        g->in_wait = 0;
    }
}

void gputime_wait_hook(void *g, int begin) { gputime_wait(g, begin); }

void gputime_step(struct gputime *g, double wall_s)
{
    if (!g->be)
        return;
    for (int p = 0; p < GPU_NPHASES; p++) {
        for (int s = 0; s < g->spans[p]; s++)
            g->ms[p] += g->be->event_ms(g->ev[p][s][0], g->ev[p][s][1]);
        g->spans[p] = 0;
    }
    for (int w = 0; w < g->waits; w++) /* the compute stream's idle time in the waits */
        g->ms[g->wph[w]] -= g->be->event_ms(g->wev[w][0], g->wev[w][1]);
    g->waits = 0;
    g->wall_ms += 1e3 * wall_s;
    g->steps++;
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
