/* ckpt_merge: freescale checkpoint merge; see ckpt_merge.h. The chain of
 * the named checkpoint (a full one and the deltas after it, verified, the
 * same run, in order: checkpoint_read) is read as a resume would, then
 * written as one full checkpoint (checkpoint_write: collective, any P). */
#include "tools/ckpt_merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cmd/rec_file.h"
#include "cmd/recommend.h"
#include "ckpt/ckpt.h"
#include "train/train_dyn.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np P freescale checkpoint merge CKPT.h5 [FILE.in] "
               "[section.key=value ...] -o OUT.h5\n"
               "\n"
               "CKPT.h5 and, when it is a delta checkpoint (output.checkpoint_delta_every),\n"
               "the chain it follows, read as train.resume would, written as one full\n"
               "checkpoint OUT.h5 (which must not exist). Without FILE.in the parameters\n"
               "stored in the checkpoint are used.\n");
}

int ckpt_merge_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "merge")) {
        usage(stderr);
        fatal("checkpoint: expected 'checkpoint merge', got 'checkpoint%s%s'", argc > 1 ? " " : "",
              argc > 1 ? argv[1] : "");
    }
    static const char *const names[] = {"-o", "--output"};
    struct rec_cmd cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.tool = "checkpoint merge";
    cmd.overrides = xmalloc((size_t)argc * sizeof *cmd.overrides);
    const char *out = NULL;
    for (int i = 2; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            exit(0);
        }
        if (cli_option("checkpoint merge", argc, argv, &i, names, 2, &v) >= 0)
            out = v;
        else
            rec_cmd_word(&cmd, argv[i]);
    }
    if (!cmd.ckpt) {
        usage(stderr);
        fatal("checkpoint merge: no checkpoint given");
    }
    if (!out)
        fatal("checkpoint merge: no output file given (-o OUT.h5)");
    if (access(out, F_OK) == 0)
        fatal("checkpoint merge: -o %s exists: name a new file", out);
    struct comm c;
    struct params p;
    struct trainer tr;
    rec_start(&cmd, &argc, &argv, &c, &p, &tr);
    rec_file_check(&c, "checkpoint merge", out); /* one message, every rank ends */
    log_release(); /* set up: what rec_start held */
    train_dyn_view_end(&tr); /* the tables themselves, not the dense view */
    checkpoint_write(&tr, out);
    log_info("checkpoint merge: %s (step %lld) -> %s", cmd.ckpt, (long long)tr.step, out);
    free(cmd.overrides);
    trainer_free(&tr);
    comm_free(&c);
    return 0;
}
