/* plan_net: the network model of 'freescale plan --net'; see plan_net.h. */
#include "tools/plan_net.h"

#include <errno.h>
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"

static const char *const mode_names[PLAN_NET_MODES] = {"none", "prioritized", "prefetch"};

const char *plan_net_mode_name(int m) { return mode_names[m]; }

/* A number with an optional unit from units[] (name, factor), or fatal(). */
struct unit {
    const char *name;
    double factor;
};

static double with_unit(const char *what, const char *text, const struct unit *u, int nu,
                        const char *expect)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno == ERANGE || !isfinite(v) || v <= 0)
        fatal("%s: '%s' is not a positive number (expected %s)", what, text, expect);
    if (!*end)
        return v;
    for (int i = 0; i < nu; i++)
        if (!strcmp(end, u[i].name))
            return v * u[i].factor;
    fatal("%s: unit '%s' of '%s' unknown (expected %s)", what, end, text, expect);
}

double plan_net_rate(const char *what, const char *text)
{
    static const struct unit u[] = {
        {"bit", 1.0 / 8}, {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8},
        {"tbit", 1e12 / 8}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    };
    return with_unit(what, text, u, (int)(sizeof u / sizeof *u),
                     "bytes/s, or a rate such as 400gbit, 100mbit, 50GB");
}

void plan_net_parse_net(struct plan_net *n, const char *text)
{
    static const struct unit u[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
    char buf[128];
    if (strlen(text) >= sizeof buf)
        fatal("--net: '%s' is too long", text);
    strcpy(buf, text);
    char *comma = strchr(buf, ',');
    if (comma)
        *comma = '\0';
    n->inter_Bps = plan_net_rate("--net", buf);
    if (comma)
        n->latency_s = with_unit("--net latency", comma + 1, u, (int)(sizeof u / sizeof *u),
                                 "seconds, or 5us, 0.1ms");
    n->on = 1;
}

/* Sums of the keys named prefix.N (N = 0, 1, ...) of object o: the
 * per-node fields; 0 without any. */
static double node_sum(json_object *o, const char *prefix)
{
    double s = 0;
    char key[48];
    json_object *v;
    for (int i = 0; snprintf(key, sizeof key, "%s.%d", prefix, i) > 0 &&
                    json_object_object_get_ex(o, key, &v);
         i++)
        s += json_object_get_double(v);
    return s;
}

/* One train line's numbers; 0 when the line is another event. x[0..1]:
 * the ids' and the rows' bytes to other nodes (0 when not reported). */
static int train_line(const char *path, long ln, const char *line, double *step, double *tokens,
                      double *bytes, double *samples, double x[2])
{
    json_object *o = json_tokener_parse(line);
    if (!o || json_object_get_type(o) != json_type_object)
        fatal("--exchange %s:%ld: not a JSON object (a metrics file of 'freescale train' "
              "expected)", path, ln);
    json_object *ev, *v;
    int ok = json_object_object_get_ex(o, "event", &ev) &&
             !strcmp(json_object_get_string(ev), "train");
    if (ok) {
        const char *need[] = {"step", "tokens", "rows_bytes", "grads_bytes", "samples_per_s",
                              "interval_s"};
        double got[6];
        for (int i = 0; i < 6; i++) {
            if (!json_object_object_get_ex(o, need[i], &v))
                fatal("--exchange %s:%ld: a train line without '%s'", path, ln, need[i]);
            got[i] = json_object_get_double(v);
        }
        *step = got[0];
        *tokens = got[1];
        *bytes = got[2] + got[3];
        *samples = got[4] * got[5];
        x[0] = node_sum(o, "xsent_ids");
        x[1] = node_sum(o, "xsent_rows");
    }
    json_object_put(o);
    return ok;
}

void plan_net_read_exchange(struct plan_net *n)
{
    const char *path = n->exchange;
    FILE *f = fopen(path, "r");
    if (!f)
        fatal("--exchange: cannot open %s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long ln = 0, lines = 0;
    double prev = 0, tok = 0, bytes = 0, tok1 = 0, bytes1 = 0, seqs = 0, seqs1 = 0, st = 0,
           st1 = 0, xids = 0, xrows = 0;
    while (getline(&line, &cap, f) > 0) {
        ln++;
        double step, t, b, q, x[2];
        if (!train_line(path, ln, line, &step, &t, &b, &q, x))
            continue;
        xids += x[0];
        xrows += x[1];
        if (step <= prev)
            fatal("--exchange %s:%ld: step %.0f after step %.0f (one run's metrics expected)",
                  path, ln, step, prev);
        /* tokens are per interval, bytes per step of it */
        if (lines++ == 0) {
            tok1 = t;
            bytes1 = b * (step - prev);
            seqs1 = q;
            st1 = step - prev;
        } else {
            tok += t;
            bytes += b * (step - prev);
            seqs += q;
            st += step - prev;
        }
        prev = step;
    }
    if (lines == 1) { /* else the first interval, which holds the start-up, is left out */
        tok = tok1;
        bytes = bytes1;
        seqs = seqs1;
        st = st1;
    }
    int rerr = ferror(f);
    free(line);
    if (fclose(f) || rerr)
        fatal("--exchange: error reading %s", path);
    if (lines == 0 || tok <= 0)
        fatal("--exchange %s: no train line with tokens (a metrics file of 'freescale train' "
              "at 2 or more ranks expected)", path);
    if (bytes <= 0)
        fatal("--exchange %s: no rows or gradients exchanged (rows_bytes + grads_bytes = 0): "
              "a run at 2 or more ranks expected", path);
    const int P0 = n->exchange_ranks;
    n->bytes_per_token = bytes / tok * (double)P0 / (double)(P0 - 1);
    n->exchange_per_rank = st > 0 ? seqs / st / P0 : 0;
    if (xids > 0 && xrows > 0) /* else net_setup's 8 bytes per row of 4 dim */
        n->ids_share = xids / xrows;
}

/* Bytes b of one rank at P split over the intra- and inter-node peers:
 * *intra, *inter (added to), and the seconds of the bytes alone (without
 * latencies) over the links. */
static double wire_s(const struct plan_net *n, int P, double b, double *intra, double *inter)
{
    if (P < 2)
        return 0;
    const int G = n->gpus_per_node < P ? n->gpus_per_node : P;
    const double remote = b * (double)(P - 1) / (double)P;
    const double x = (double)(P - G) / (double)(P - 1); /* of the remote: other nodes */
    *intra += remote * (1 - x);
    *inter += remote * x;
    return remote * (1 - x) / n->intra_Bps + remote * x / (n->eff * n->inter_Bps);
}

/* Seconds of one message set (a message per peer): P - 1 latencies. */
static double msgs_s(const struct plan_net *n, int P) { return P < 2 ? 0 : (P - 1) * n->latency_s; }

/* Seconds for the hierarchical ring all-reduce of D bytes. */
static double allreduce_s(const struct plan_net *n, int P, double D)
{
    if (P < 2)
        return 0;
    const int G = n->gpus_per_node < P ? n->gpus_per_node : P;
    const int N = (P + G - 1) / G;
    double s = 0;
    if (G > 1)
        s += 2.0 * (G - 1) / G * D / n->intra_Bps + 2.0 * (G - 1) * n->latency_s;
    if (N > 1)
        s += 2.0 * (N - 1) / N * (D / G) / (n->eff * n->inter_Bps) + 2.0 * (N - 1) * n->latency_s;
    return s;
}

static double pos(double x) { return x > 0 ? x : 0; }

void plan_net_predict(const struct plan_net *n, int P, double T, double mean, double tokens,
                      struct plan_net_row *r)
{
    memset(r, 0, sizeof *r);
    const double unit_ms = n->gflops > 0 ? 1e3 / (n->gflops * 1e9) : 1e-3;
    r->compute_ms = mean * unit_ms;
    r->bubble_ms = (T - mean) * unit_ms;
    const double half = 0.5 * n->bytes_per_token * tokens; /* rows; gradients the same */
    double ignore = 0;
    const double lat = 1e3 * msgs_s(n, P);
    /* wire times, ms: the rows' and the gradients' bytes, the ids' */
    const double rows_w = 1e3 * wire_s(n, P, half, &r->intra_bytes, &r->inter_bytes);
    const double grads_w = 1e3 * wire_s(n, P, half, &r->intra_bytes, &r->inter_bytes);
    const double ids_w = 1e3 * wire_s(n, P, n->ids_share * half, &ignore, &ignore);
    r->rows_ms = rows_w + lat;
    r->grads_ms = grads_w + lat;
    r->ids_ms = P < 2 ? 0 : ids_w + lat;
    r->dense_ms = 1e3 * allreduce_s(n, P, n->dense_bytes);
    /* the slowest rank's forward and backward: what communication can hide behind */
    const double fwd = n->fwd_share * T * unit_ms, bwd = n->bwd_share * T * unit_ms;
    const double host = pos(1 - n->fwd_share - n->bwd_share) * T * unit_ms;
    const double ids = r->ids_ms, grads = r->grads_ms, dense = r->dense_ms;
    const double all = ids + r->rows_ms + grads + dense;
    double ex[PLAN_NET_MODES];
    ex[0] = all;
    /* prioritized: chunk 0 behind nothing, chunk 1 (its own messages) behind
     * the forward, the next step's ids, the gradients and the dense buckets
     * behind the backward */
    const double in = n->input_share * rows_w;
    const double rows1 = P < 2 ? 0 : rows_w - in + lat;
    ex[1] = (P < 2 ? 0 : in + lat) + pos(rows1 - fwd) + pos(ids + grads + dense - bwd);
    /* prefetch: the next step's ids behind the forward, the gradients behind
     * the backward, then the next step's rows ahead and late (each their
     * own messages) behind the host work and what the gradients left of the
     * backward; the dense all-reduce (in one piece, after the update) behind
     * nothing */
    const double c = n->collision;
    const double ahead = P < 2 || c >= 1 ? 0 : (1 - c) * rows_w + lat;
    const double late = P < 2 || c <= 0 ? 0 : c * rows_w + lat;
    ex[2] = pos(ids - fwd) + pos(grads - bwd) + pos(ahead + late - host - pos(bwd - grads)) + dense;
    for (int m = 0; m < PLAN_NET_MODES; m++) {
        r->exposed_ms[m] = all - n->hide * (all - ex[m]);
        r->step_ms[m] = r->compute_ms + r->bubble_ms + r->exposed_ms[m];
    }
}
