/* schema: the features of a run; see schema.h. */
#include "feature/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "feature/feat_cross.h"

int feat_conf_from_params(const struct params *p, struct feat_conf *fc, char *err,
                          size_t errlen)
{
    memset(fc, 0, sizeof *fc);
    fc->item = params_str(p, P_features_item);
    fc->event = params_str(p, P_features_event);
    fc->user = params_str(p, P_features_user);
    fc->dims = params_str(p, P_features_dims);
    fc->dynamic = params_str(p, P_features_dynamic);
    fc->cross = params_str(p, P_features_cross);
    const char *pl = params_str(p, P_features_placement);
    fc->placement = !strcmp(pl, "replicated") ? FEAT_PLACE_REPLICATED
                    : !strcmp(pl, "sharded")  ? FEAT_PLACE_SHARDED
                                              : FEAT_PLACE_AUTO;
    fc->replicate_below = params_i64(p, P_features_replicate_below);
    fc->dim = (int)params_i64(p, P_features_dim);
    fc->mean = !strcmp(params_str(p, P_features_pooling), "mean");
    const char *opt = params_str(p, P_features_optimizer);
    fc->optimizer = !strcmp(opt, "same") ? -1 : emb_optim_parse(opt);
    fc->lr = (float)params_f64(p, P_features_lr);
    (void)err;
    (void)errlen;
    return 0;
}

/* The width of feature name: its features.dims entry, else the default. */
int feat_width_of(const struct feat_conf *fc, const char *name, int def, char *err,
                  size_t errlen)
{
    const char *p = fc->dims;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *colon = memchr(p, ':', n);
        char *end;
        long w = colon ? strtol(colon + 1, &end, 10) : 0;
        if (!colon || end != p + n || w < 1 || w > 65536)
            return errorf(err, errlen, "features.dims = '%s': '%.*s' is not NAME:WIDTH with "
                          "1 <= WIDTH <= 65536", fc->dims, (int)n, p);
        if ((size_t)(colon - p) == strlen(name) && !strncmp(p, name, strlen(name)))
            return (int)w;
        p += n + (p[n] == ',');
    }
    return def;
}

/* The names of the dataset's features of one kind, for a message. */
static void kind_list(const struct dataset *ds, enum dataset_feat_kind kind, char *buf,
                      size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < ds->nfeat && at + 4 < len; i++)
        if (ds->feat[i].kind == kind)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", ds->feat[i].name);
    if (!buf[0])
        snprintf(buf, len, "none");
}

int feat_spec_table(struct feat_schema *s, const struct feat_conf *fc, struct feat_spec *sp,
                    const char *name, char *err, size_t errlen)
{
    sp->width = feat_width_of(fc, name, fc->dim ? fc->dim : s->d, err, errlen);
    if (sp->width < 0)
        return -1;
    const double values = (double)sp->rows * (double)sp->width;
    sp->replicated = fc->placement == FEAT_PLACE_REPLICATED ||
                     (fc->placement == FEAT_PLACE_AUTO && values <= (double)fc->replicate_below);
    sp->dynamic = feat_name_listed(fc->dynamic, name);
    if (sp->dynamic && fc->placement == FEAT_PLACE_REPLICATED)
        return errorf(err, errlen, "features.dynamic = %s: '%s' is dynamic, which is a sharded "
                      "table: not with features.placement = replicated (use auto or sharded)",
                      fc->dynamic, name);
    if (sp->dynamic) /* a dynamic table is a sharded one */
        sp->replicated = 0;
    sp->table = s->ntables++;
    sp->proj = sp->width != s->d ? s->ntables++ : -1;
    return 0;
}

/* An entry of a comma-separated list without its surrounding blanks
 * ("artist, album" names "album"). */
static void trim_span(const char **p, size_t *n)
{
    while (*n && (**p == ' ' || **p == '\t'))
        (*p)++, (*n)--;
    while (*n && ((*p)[*n - 1] == ' ' || (*p)[*n - 1] == '\t'))
        (*n)--;
}

/* 1 if name is one of the comma-separated list's. */
int feat_name_listed(const char *list, const char *name)
{
    const size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        const char *next = p + n + (p[n] == ',');
        trim_span(&p, &n);
        if (n == len && !strncmp(p, name, n))
            return 1;
        p = next;
    }
    return 0;
}

/* Add the features listed in text (parameter param) of one role. */
static int add_list(struct feat_schema *s, const struct feat_conf *fc, const struct dataset *ds,
                    const char *param, const char *text, enum feat_role role,
                    enum dataset_feat_kind kind, char *err, size_t errlen)
{
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *next = p + n + (p[n] == ','), *at = p;
        trim_span(&at, &n);
        char name[DATASET_FEATURE_NAME];
        if (n == 0 || n >= sizeof name)
            return errorf(err, errlen, "%s = '%s': an empty or too long name", param, text);
        memcpy(name, at, n);
        name[n] = 0;
        p = next;
        int df = -1;
        for (int i = 0; i < ds->nfeat; i++)
            if (ds->feat[i].kind == kind && !strcmp(ds->feat[i].name, name))
                df = i;
        const int user_id = df < 0 && role == FEAT_USER && !strcmp(name, "id");
        if (df < 0 && !user_id) {
            char list[1024];
            kind_list(ds, kind, list, sizeof list);
            return errorf(err, errlen, "%s = %s: %s has no /%s/%s (its %s features: %s)%s",
                          param, text, ds->path, dataset_feat_kind_name(kind), name,
                          dataset_feat_kind_name(kind), list,
                          role == FEAT_USER ? "; features.user = id is the user id" : "");
        }
        for (int i = 0; i < s->n; i++)
            if (s->f[i].role == role && !strcmp(s->f[i].name, name))
                return errorf(err, errlen, "%s = %s: '%s' is listed twice", param, text, name);
        if (user_id && ds->num_users >= INT32_MAX)
            return errorf(err, errlen, "%s = %s: the user id of %s's %lld users does not fit the "
                          "32-bit values of a feature", param, text, ds->path,
                          (long long)ds->num_users);
        /* the user id (a dataset without /users/id): user u has the value u + 1 */
        const struct dataset_feature uid = {.n = ds->num_users, .cardinality = ds->num_users + 1};
        const struct dataset_feature *f = user_id ? &uid : &ds->feat[df];
        if (f->is_float)
            return errorf(err, errlen, "%s = %s: /%s/%s has float values (a label, for "
                          "ranking); features enter the model as categorical ids", param, text,
                          dataset_feat_kind_name(kind), name);
        if (f->cardinality < 2)
            return errorf(err, errlen, "%s = %s: /%s/%s has cardinality %lld: no value but "
                          "missing (0), nothing to learn", param, text,
                          dataset_feat_kind_name(kind), name, (long long)f->cardinality);
        struct feat_spec *sp = &s->f[s->n++];
        memset(sp, 0, sizeof *sp);
        snprintf(sp->name, sizeof sp->name, "%s", name);
        sp->role = role;
        sp->df = df;
        sp->user_id = user_id;
        sp->multi = f->multi;
        sp->rows = f->cardinality - 1;
        if (feat_spec_table(s, fc, sp, name, err, errlen))
            return -1;
        if (role == FEAT_USER)
            sp->ctx = s->n_user++;
        else if (role == FEAT_ITEM)
            s->n_item++;
        else
            s->n_event++;
    }
    return 0;
}

int feat_schema_resolve(struct feat_schema *s, const struct feat_conf *fc, const struct dataset *ds,
                        int d, const struct emb_optim_conf *emb, uint64_t seed, float init_std,
                        char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->d = d;
    s->mean = fc->mean;
    s->seed = seed;
    s->init_std = init_std;
    s->optim = *emb;
    if (fc->optimizer >= 0)
        s->optim.kind = (enum emb_optimizer)fc->optimizer;
    if (fc->lr > 0)
        s->optim.lr = fc->lr;
    if (add_list(s, fc, ds, "features.item", fc->item, FEAT_ITEM, DS_ITEMS, err, errlen) ||
        add_list(s, fc, ds, "features.event", fc->event, FEAT_EVENT, DS_EVENTS, err, errlen) ||
        add_list(s, fc, ds, "features.user", fc->user, FEAT_USER, DS_USERS, err, errlen))
        return -1;
    if (feat_cross_add(s, fc, ds, err, errlen))
        return -1;
    /* every features.dynamic entry must name a feature of the run */
    for (const char *p = fc->dynamic; *p;) {
        size_t n = strcspn(p, ",");
        const char *next = p + n + (p[n] == ',');
        trim_span(&p, &n);
        int found = 0;
        for (int i = 0; i < s->n; i++)
            found |= n == strlen(s->f[i].name) && !strncmp(p, s->f[i].name, n);
        if (!found)
            return errorf(err, errlen, "features.dynamic = %s: '%.*s' names no feature of "
                          "features.item, features.event or features.user", fc->dynamic, (int)n,
                          p);
        p = next;
    }
    /* every features.dims entry must name a feature of the run */
    for (const char *p = fc->dims; *p;) {
        size_t n = strcspn(p, ",");
        const char *colon = memchr(p, ':', n);
        int found = 0;
        for (int i = 0; colon && i < s->n; i++)
            found |= (size_t)(colon - p) == strlen(s->f[i].name) &&
                     !strncmp(p, s->f[i].name, strlen(s->f[i].name));
        if (!found)
            return errorf(err, errlen, "features.dims = %s: '%.*s' names no feature of "
                          "features.item, features.event or features.user", fc->dims, (int)n, p);
        p += n + (p[n] == ',');
    }
    return 0;
}

void feat_schema_add_label(struct feat_schema *s, const char *name, int k, int binary)
{
    if (s->n == DATASET_MAX_FEATURES)
        fatal("features: more than %d features with the tasks' labels", DATASET_MAX_FEATURES);
    struct feat_spec *sp = &s->f[s->n++];
    memset(sp, 0, sizeof *sp);
    snprintf(sp->name, sizeof sp->name, "%s", name);
    sp->role = FEAT_EVENT;
    sp->df = -1;
    sp->label = k + 1;
    sp->rows = binary ? 2 : 1;
    sp->width = s->d;
    sp->replicated = 1;
    sp->table = s->ntables++;
    sp->proj = -1;
    s->n_event++;
}

void feat_schema_describe(const struct feat_schema *s, int i, char *buf, size_t len)
{
    static const char *role[] = {"item", "event", "user"};
    const struct feat_spec *f = &s->f[i];
    snprintf(buf, len, "%s feature %s%s: %s%lld rows x %d, %s%s", role[f->role], f->name,
             f->role == FEAT_USER                ? " (contextual token)"
             : f->label                          ? " (the task's label, in the actions)"
             : f->cross                          ? " (a hashed cross, on its item's token)"
             : f->role == FEAT_EVENT && s->actions ? " (in the actions)"
                                                   : "",
             f->multi ? "multi-valued, " : "", (long long)f->rows, f->width,
             f->dynamic ? "dynamic, sharded" : f->replicated ? "replicated" : "sharded",
             f->proj >= 0 ? ", projected to model.dim" : "");
}
