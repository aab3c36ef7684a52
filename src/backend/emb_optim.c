/* emb_optim: row-wise sparse optimizers; see emb_optim.h. */
#include "backend/emb_optim.h"

#include <string.h>

int emb_optim_parse(const char *name)
{
    if (!strcmp(name, "sgd")) return EMB_OPT_SGD;
    if (!strcmp(name, "adagrad")) return EMB_OPT_ADAGRAD;
    if (!strcmp(name, "adam")) return EMB_OPT_ADAM;
    return -1;
}

const char *emb_optim_name(enum emb_optimizer kind)
{
    return kind == EMB_OPT_SGD ? "sgd" : kind == EMB_OPT_ADAGRAD ? "adagrad" : "adam";
}

int64_t emb_optim_state_floats(enum emb_optimizer kind, int dim)
{
    return kind == EMB_OPT_SGD ? 0 : kind == EMB_OPT_ADAGRAD ? 1 : 2 * (int64_t)dim;
}
