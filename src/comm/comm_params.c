/* comm_params: the parameters of a job, read once and broadcast; see
 * comm_params.h. */
#include "comm/comm_params.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "comm/comm.h"
#include "comm/comm_fail.h"

void comm_params_load(struct params *p, struct comm *c, const char *path, int noverrides,
                      char **overrides)
{
    char err[PARAM_ERR_MAX];
    char *text = NULL;
    params_defaults(p);
    int bad = 0;
    if (c->rank == 0) {
        bad = path && params_read_file(p, path, err, sizeof err);
        for (int i = 0; !bad && i < noverrides; i++)
            bad = params_override(p, overrides[i], "command line", err, sizeof err) != 0;
        text = bad ? NULL : params_serialize(p);
    }
    comm_fail_agree(c, bad, err); /* every rank ends on rank 0's error */
    comm_bcast_string(c, &text, 0);
    if (c->rank != 0) {
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
            if (params_override(p, line, "broadcast", err, sizeof err))
                fatal("%s", err);
    }
    free(text);
}
