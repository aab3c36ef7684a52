/* model: construction and parameters common to the sequence models; see
 * model.h. */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/exact.h"
#include "base/log.h"
#include "base/rng.h"
#include "backend/stage.h"

void model_positions(const struct model *m, const struct batch *b, const char *who,
                     int64_t *pos)
{
    const struct model_split *sp = b->split;
    if (b->offsets[0] != 0 || b->offsets[b->B] != b->T)
        fatal("%s: batch offsets [%lld, %lld] do not span T = %lld", who,
              (long long)b->offsets[0], (long long)b->offsets[b->B], (long long)b->T);
    for (int64_t s = 0; s < b->B; s++) {
        const int64_t L = b->offsets[s + 1] - b->offsets[s], p0 = sp ? sp->pos0[s] : 0;
        if (L < 0 || p0 < 0 || p0 + L > m->conf.max_len)
            fatal("%s: sequence %lld has positions [%lld, %lld), max_len is %d", who,
                  (long long)s, (long long)p0, (long long)(p0 + L), m->conf.max_len);
        if (sp && sp->key_off[s + 1] - sp->key_off[s] != p0 + L)
            fatal("%s: segment %lld: %lld key rows for positions %lld + %lld", who,
                  (long long)s, (long long)(sp->key_off[s + 1] - sp->key_off[s]),
                  (long long)p0, (long long)L);
        for (int64_t i = 0; i < L; i++)
            pos[b->offsets[s] + i] = p0 + i;
    }
}

static uint64_t name_key(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

struct dense_tensor *model_add_param(struct model *m, const char *name, int rows, int cols,
                                     float scale, int decay, uint64_t seed)
{
    if (m->nparams == MODEL_MAX_PARAMS)
        fatal("model: more than %d parameter tensors", MODEL_MAX_PARAMS);
    struct dense_tensor *t = &m->params[m->nparams++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rows = rows;
    t->cols = cols;
    t->n = (int64_t)rows * cols;
    t->decay = decay;
    t->lr_scale = 1.0f;
    t->w = m->be->alloc((size_t)t->n * sizeof(float));
    /* t->g: placed in the arena by model_init once every tensor exists */
    if (scale != 0) {
        float *h = xmalloc((size_t)t->n * sizeof *h);
        struct rng r;
        rng_init(&r, rng_key(seed, name_key(name), 0x696e6974ull));
        for (int64_t i = 0; i < t->n; i++)
            h[i] = (float)((2.0 * rng_uniform(&r) - 1.0) * scale);
        m->be->to_device(t->w, h, (size_t)t->n * sizeof(float));
        free(h);
    }
    return t;
}

void model_fill(const struct model *m, struct dense_tensor *t, float value)
{
    float *h = xmalloc((size_t)t->n * sizeof *h);
    for (int64_t i = 0; i < t->n; i++)
        h[i] = value;
    m->be->to_device(t->w, h, (size_t)t->n * sizeof(float));
    free(h);
}

int model_conf_check(const struct model_conf *conf, char *err, size_t errlen)
{
    if (conf->d < 1 || conf->heads < 1 || conf->d % conf->heads != 0)
        return errorf(err, errlen, "model.heads = %d must divide model.dim = %d", conf->heads,
                      conf->d);
    if (conf->max_len < 1)
        return errorf(err, errlen, "data.max_seq_len = %d must be >= 1", conf->max_len);
    if (!(conf->dropout >= 0 && conf->dropout < 1))
        return errorf(err, errlen, "model.dropout = %g must be in [0, 1)", (double)conf->dropout);
    const int hstu = conf->type == MODEL_HSTU;
    if (conf->layers < (hstu ? 0 : 1) ||
        (hstu ? model_hstu_tensors(conf) : model_sasrec_tensors(conf)) > MODEL_MAX_PARAMS) {
        struct model_conf c = *conf; /* the most layers that fit */
        for (c.layers = 1; (hstu ? model_hstu_tensors(&c) : model_sasrec_tensors(&c)) <=
                           MODEL_MAX_PARAMS;)
            c.layers++;
        const int most = c.layers - 1;
        return errorf(err, errlen, "model.layers = %d: %s takes %d to %d layers%s",
                      conf->layers, hstu ? "hstu" : "sasrec", hstu ? 0 : 1, most,
                      hstu && conf->time_bias ? " with the time bias" : "");
    }
    return 0;
}

int model_init(struct model *m, const struct model_conf *conf, const struct backend_ops *be,
               uint64_t seed, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->conf = *conf;
    m->be = be;
    if (model_conf_check(conf, err, errlen))
        return -1;
    m->stage = stage_new(be);
    int rc = conf->type == MODEL_HSTU ? model_hstu_init(m, seed, err, errlen)
                                      : model_sasrec_init(m, seed, err, errlen);
    if (rc)
        return rc;
    for (int i = 0; i < conf->nextra; i++) { /* after the model's own: the hook's order holds */
        const struct model_extra *x = &conf->extra[i];
        model_add_param(m, x->name, x->rows, x->cols, x->scale, x->decay, seed);
    }
    int64_t n = 0;
    for (int i = 0; i < m->nparams; i++)
        n += (m->params[i].n + MODEL_GRAD_ALIGN - 1) / MODEL_GRAD_ALIGN * MODEL_GRAD_ALIGN;
    m->ngrad = n;
    m->grad = be->alloc((size_t)(n ? n : 1) * sizeof(float));
    n = 0;
    for (int i = 0; i < m->nparams; i++) {
        m->params[i].g = m->grad + n;
        n += (m->params[i].n + MODEL_GRAD_ALIGN - 1) / MODEL_GRAD_ALIGN * MODEL_GRAD_ALIGN;
    }
    return 0;
}

void model_free(struct model *m)
{
    if (m->vt && m->vt->free)
        m->vt->free(m);
    for (int i = 0; i < m->nparams; i++)
        m->be->free(m->params[i].w);
    if (m->be) /* none: never initialised (a trainer opened, not built) */
        m->be->free(m->grad);
    m->grad = NULL;
    free(m->xgrad);
    free(m->xtmp);
    m->xgrad = NULL;
    m->xtmp = NULL;
    m->nparams = 0;
    stage_free(m->stage);
    m->stage = NULL;
}

void model_upload(struct model *m, void *dst, const void *src, size_t bytes)
{
    stage_up(m->stage, dst, src, bytes);
}

void model_reserve(struct model *m, int64_t B, int64_t T, int64_t K)
{
    if (m->vt && m->vt->reserve)
        m->vt->reserve(m, B, T, K, 1);
}

void model_reserve_cold(struct model *m, int64_t B, int64_t T, int64_t K)
{
    if (m->vt && m->vt->reserve)
        m->vt->reserve(m, B, T, K, 0);
}

struct dense_tensor *model_param(struct model *m, const char *name)
{
    for (int i = 0; i < m->nparams; i++)
        if (!strcmp(m->params[i].name, name))
            return &m->params[i];
    return NULL;
}

void model_zero_grads(struct model *m)
{
    m->be->zero(m->grad, (size_t)m->ngrad * sizeof(float));
    if (m->xgrad)
        memset(m->xgrad, 0, ((size_t)m->ngrad * EXACT_LIMBS + 1) * sizeof *m->xgrad);
}

void model_set_hook(struct model *m, struct model_hook h) { m->hook = h; }

void model_between_layers(const struct model *m, int first_final)
{
    if (m->hook.between_layers)
        m->hook.between_layers(m->hook.ctx, first_final);
}
