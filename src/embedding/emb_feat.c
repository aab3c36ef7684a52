/* emb_feat: the embedding table of a feature; see emb_feat.h. */
#include "embedding/emb_feat.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

void emb_feat_table(const struct feat_schema *s, int k, struct emb_table_conf *conf)
{
    memset(conf, 0, sizeof *conf);
    for (int i = 0; i < s->n; i++) {
        const struct feat_spec *f = &s->f[i];
        if (f->table != k && f->proj != k)
            continue;
        conf->seed = s->seed;
        conf->optim = s->optim;
        if (f->table == k) {
            snprintf(conf->name, sizeof conf->name, "%s.%s", f->label ? "label" : "feat",
                     f->name);
            conf->rows = f->rows;
            conf->dim = f->width;
            conf->init = EMB_INIT_NORMAL;
            conf->init_scale = s->init_std;
            conf->replicated = f->replicated;
            conf->dyn.on = f->dynamic; /* its settings: the caller's (embedding.*) */
        } else { /* the projection: width rows of d, uniform +-sqrt(3 / width) (variance 1/width) */
            snprintf(conf->name, sizeof conf->name, "proj.%s", f->name);
            conf->rows = f->width;
            conf->dim = s->d;
            conf->init = EMB_INIT_UNIFORM;
            conf->init_scale = (float)sqrt(3.0 / f->width);
            conf->replicated = 1;
        }
        return;
    }
    fatal("emb_feat_table: no table %d", k);
}
