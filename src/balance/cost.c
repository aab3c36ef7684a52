/* cost: the sequence cost model c(L) = c0 + a L + b L^2; see cost.h. */
#include "balance/cost.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "balance/split_long.h"
#include "base/log.h"
#include "base/params.h"

int cost_model_parse(const char *text, struct cost_model *m, char *err, size_t errlen)
{
    double v[3];
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        v[i] = strtod(p, &end);
        if (end == p || errno == ERANGE || !isfinite(v[i]))
            return errorf(err, errlen,
                          "parallel.cost_model: '%s' is not 'auto' or three numbers 'c0,a,b'",
                          text);
        if (i < 2 && *end != ',')
            return errorf(err, errlen,
                          "parallel.cost_model: '%s' is not 'auto' or three numbers 'c0,a,b'",
                          text);
        if (i == 2 && *end)
            return errorf(err, errlen,
                          "parallel.cost_model: '%s' has trailing text after c0,a,b", text);
        p = end + 1;
    }
    if (v[0] < 0 || v[1] < 0 || v[2] < 0)
        return errorf(err, errlen,
                      "parallel.cost_model: '%s': c0, a and b must be >= 0 (a cost is never "
                      "negative)", text);
    if (v[0] + v[1] + v[2] <= 0)
        return errorf(err, errlen, "parallel.cost_model: '%s': c0, a and b are all 0", text);
    m->c0 = v[0];
    m->a = v[1];
    m->b = v[2];
    return 0;
}

void cost_flops_auto(const struct model_conf *conf, int negatives, int bce, struct flop_model *f)
{
    const double d = conf->d, layers = conf->layers, H = conf->heads;
    const double W = conf->type == MODEL_HSTU ? 10.0 : 12.0; /* dense d^2 per token */
    const double rows = bce ? 2.0 : (double)negatives + 1.0;   /* scored rows per token */
    const double loss = 2.0 * d * rows + (bce ? 0.0 : 6.0 * rows);
    f->per_token = 3.0 * (layers * (W * d * d + 40.0 * d) + 10.0 * d + loss);
    f->per_pair = 4.0 * layers * (4.0 * d + 8.0 * H);
}

void cost_model_auto(const struct model_conf *conf, int negatives, int bce,
                     struct cost_model *m)
{
    struct flop_model f;
    cost_flops_auto(conf, negatives, bce, &f);
    m->c0 = f.per_token;
    m->a = f.per_token + f.per_pair / 2.0;
    m->b = f.per_pair / 2.0;
}

void cost_model_conf(const struct params *p, struct model_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    conf->type = params_i64(p, P_model_type) == 0 ? MODEL_HSTU : MODEL_SASREC;
    conf->d = (int)params_i64(p, P_model_dim);
    conf->layers = (int)params_i64(p, P_model_layers);
    conf->heads = (int)params_i64(p, P_model_heads);
    conf->max_len = (int)params_i64(p, P_data_max_seq_len);
    conf->dropout = (float)params_f64(p, P_model_dropout);
    conf->time_bias = (int)params_i64(p, P_data_timestamps);
}

int cost_model_from_params(const struct params *p, struct cost_model *m, int *is_auto,
                           char *err, size_t errlen)
{
    const char *text = params_str(p, P_parallel_cost_model);
    int autom = !strcmp(text, "auto");
    if (is_auto)
        *is_auto = autom;
    if (!autom)
        return cost_model_parse(text, m, err, errlen);
    struct model_conf conf;
    cost_model_conf(p, &conf);
    cost_model_auto(&conf, (int)params_i64(p, P_train_negatives),
                    !strcmp(params_str(p, P_train_loss), "bce"), m);
    return 0;
}

int split_conf_from_params(const struct params *p, const struct cost_model *cm,
                           struct split_conf *sc, char *err, size_t errlen)
{
    memset(sc, 0, sizeof *sc);
    sc->on = !strcmp(params_str(p, P_parallel_split_long), "auto");
    sc->threshold = params_f64(p, P_parallel_split_threshold);
    sc->fraction = params_f64(p, P_parallel_split_fraction);
    sc->min_chunk = HSTU_TILE;
    sc->force = sc->on ? (int)params_i64(p, P_debug_split_chunks) : 0;
    if (sc->force == 1)
        return errorf(err, errlen, "debug.split_chunks = 1: give 0 (off) or at least 2 chunks");
    if (sc->force > SPLIT_MAX_CHUNKS)
        return errorf(err, errlen, "debug.split_chunks = %d: at most %d chunks", sc->force,
                      SPLIT_MAX_CHUNKS);
    const char *kv = params_str(p, P_parallel_split_kv_cost);
    if (!strcmp(kv, "auto")) {
        struct model_conf conf;
        struct cost_model fl;
        cost_model_conf(p, &conf);
        cost_model_auto(&conf, (int)params_i64(p, P_train_negatives),
                        !strcmp(params_str(p, P_train_loss), "bce"), &fl);
        sc->kv_cost = 160.0 * conf.d * conf.layers * (fl.a > 0 ? cm->a / fl.a : 1.0);
    } else {
        char *end;
        errno = 0;
        sc->kv_cost = strtod(kv, &end);
        if (end == kv || *end || errno == ERANGE || !(sc->kv_cost >= 0) || !isfinite(sc->kv_cost))
            return errorf(err, errlen,
                          "parallel.split_kv_cost = '%s': expected auto or a finite number >= 0",
                          kv);
    }
    return split_check(sc, cm, err, errlen);
}

void cost_model_format(const struct cost_model *m, char *buf, size_t len)
{
    snprintf(buf, len, "c0=%.6g, a=%.6g, b=%.6g", m->c0, m->a, m->b);
}
