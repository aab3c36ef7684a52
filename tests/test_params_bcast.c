/* test_params_bcast: parameters read by rank 0 reach every rank identically.
 * Rank 0 writes the file; the other ranks are given a path that does not
 * exist and an override that would be an error, which proves that they
 * never read the file nor apply overrides themselves. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "mpitest.h"
#include "base/params.h"
#include "comm/comm_params.h"

int main(int argc, char **argv)
{
    struct comm c;
    comm_init(&c, &argc, &argv);
    char path[64] = "/nonexistent/freescale-never-opened.in";
    char *ov_root[] = {"model.dim=64", "train.seed=1e3"};
    char *ov_other[] = {"no.such=key"};
    if (c.rank == 0) {
        snprintf(path, sizeof path, "/tmp/fs-params-XXXXXX");
        int fd = mkstemp(path);
        T_CHECK(fd >= 0, "mkstemp");
        const char *text = "# test file\n[data]\npath = /data/x.h5   # inline comment\n"
                           "[model]\ntype = sasrec\ndropout = 0.5\n[train]\nlr = 0.01\n"
                           "[data]\ntimestamps = off\n";
        T_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write");
        close(fd);
    }
    struct params p;
    comm_params_load(&p, &c, path, c.rank == 0 ? 2 : 1, c.rank == 0 ? ov_root : ov_other);
    if (c.rank == 0)
        unlink(path);
    T_CHECK(!strcmp(params_str(&p, P_data_path), "/data/x.h5"), "path '%s'",
            params_str(&p, P_data_path));
    T_CHECK(!strcmp(params_str(&p, P_model_type), "sasrec"), "type");
    T_CHECK(params_i64(&p, P_model_type) == 1, "type index");
    T_CHECK(params_f64(&p, P_model_dropout) == 0.5, "dropout");
    T_CHECK(params_f64(&p, P_train_lr) == 0.01, "lr");
    T_CHECK(params_i64(&p, P_model_dim) == 64, "dim from override");
    T_CHECK(params_i64(&p, P_train_seed) == 1000, "seed from override");
    T_CHECK(params_i64(&p, P_data_timestamps) == 0, "timestamps off");
    T_CHECK(params_i64(&p, P_model_layers) == 2, "default layers");

    /* every rank holds exactly rank 0's values */
    char *mine = params_serialize(&p);
    char *root = c.rank == 0 ? strdup(mine) : NULL;
    comm_bcast_string(&c, &root, 0);
    int64_t differ = comm_allreduce_sum_i64(&c, strcmp(mine, root) != 0);
    T_CHECK(differ == 0, "%lld ranks differ from rank 0", (long long)differ);
    free(mine);
    free(root);
    if (c.rank == 0)
        printf("params broadcast to %d ranks: ok\n", c.size);
    comm_free(&c);
    return 0;
}
