/* placeholder, replaced by the implementation */
#include "model.h"
#include "log.h"
int model_hstu_init(struct model *m, uint64_t seed, char *err, size_t errlen)
{ (void)m; (void)seed; return errorf(err, errlen, "placeholder"); }
