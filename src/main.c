/* main: command-line entry point of freescale; dispatches subcommands. */
#include <errno.h>
#include <hdf5.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "cli/banner.h"
#include "tools/bench_tools.h"
#include "backend/blas.h"
#include "base/check.h"
#include "comm/comm.h"
#include "comm/comm_fail.h"
#include "data/dataset.h"
#include "config.h"
#include "tools/data_tools.h"
#include "tools/ckpt_merge.h"
#include "cmd/export.h"
#include "base/params.h"
#include "tools/plan_tools.h"
#include "cmd/recommend.h"
#include "cmd/score.h"
#include "cmd/train_main.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: freescale COMMAND [ARGS]\n"
            "\n"
            "  train FILE.in [section.key=value ...] [--verbose]\n"
            "        train a model (run under mpirun for several ranks); --verbose prints\n"
            "        the effective parameters (always in output.metrics; train, recommend,\n"
            "        score, export)\n"
            "  params FILE.in [section.key=value ...]\n"
            "        check a parameter file and overrides; print the effective parameters\n"
            "  plan FILE.in [section.key=value ...] --batch-per-rank N [--ranks LIST] [--csv F] [--png F]\n"
            "        predict the bubble of each balance mode at many rank counts\n"
            "  calibrate FILE.in [section.key=value ...]\n"
            "        time the model and fit parallel.cost_model\n"
            "  recommend CKPT.h5 [FILE.in] [section.key=value ...] --top K -o OUT.csv|OUT.h5\n"
            "           [--users FILE]\n"
            "        every user's top-K items after the whole history, in the original ids\n"
            "  score CKPT.h5 [FILE.in] [section.key=value ...] --pairs PAIRS.csv -o OUT.csv|OUT.h5\n"
            "        a ranking model's scores of (user, item) pairs after the users' histories\n"
            "  export CKPT.h5 [FILE.in] [section.key=value ...] -o MODEL.h5\n"
            "        item table, user vectors and dense parameters as HDF5 arrays (NumPy)\n"
            "  checkpoint merge CKPT.h5 [FILE.in] [section.key=value ...] -o OUT.h5\n"
            "        a delta checkpoint's chain as one full checkpoint\n"
            "  help params          every parameter, its default, range and meaning\n"
            "  data import --format movielens|csv|sasrec|jsonl INPUT -o OUT.h5 [options]\n"
            "  data gen --users N --items N --length DIST -o OUT.h5 [options]\n"
            "  data stats FILE.h5 [--dim D]\n"
            "  data check FILE.h5   validate every event of a dataset\n"
            "  bench exchange [options] [section.key=value ...]\n"
            "        embedding all-to-all benchmark (run under mpirun; --help)\n"
            "  --version            print the version and the libraries in use\n"
            "\n"
            "'freescale data COMMAND --help' describes each data tool.\n");
}

static int cmd_params(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: freescale params FILE.in [section.key=value ...]\n");
        return 2;
    }
    struct comm c;
    struct params p;
    banner_set_verbose(1); /* the effective parameters are this command's output */
    banner_start(&c, &p, &argc, &argv, argv[1], argc - 2, argv + 2);
    /* train's checks (the rank count only when run under mpirun), then the
     * dataset if it is here: what train would refuse, refused now */
    char err[1100] = "";
    int bad = train_conf_check(&p, c.size > 1 ? c.size : 0, err, sizeof err);
    const char *path = params_str(&p, P_data_path);
    struct stat st;
    if (!bad && c.rank == 0 && stat(path, &st) != 0) {
        log_warn("data.path = %s: %s here (train will need it)", path, strerror(errno));
    } else if (!bad && c.rank == 0) {
        struct dataset ds;
        char derr[1024];
        bad = dataset_open(&ds, path, derr, sizeof derr) != 0;
        if (!bad && dataset_refuse_raw(&ds, (int)params_i64(&p, P_embedding_dynamic), derr,
                                       sizeof derr)) {
            bad = 1;
            dataset_close(&ds);
        }
        if (bad)
            snprintf(err, sizeof err, "data.path: %s", derr);
        else
            dataset_close(&ds);
    }
    comm_fail_agree(&c, bad, err);
    banner_show(&c, &p);
    comm_free(&c);
    return 0;
}

/* The data tools are serial: refuse to run as several MPI ranks writing the
 * same file. */
static void refuse_parallel(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1)
            fatal("'freescale data' tools are serial: run them without mpirun/srun "
                  "(%s=%s)", vars[i], v);
    }
}

static int cmd_data(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    refuse_parallel();
    const char *sub = argv[1];
    if (!strcmp(sub, "import"))
        return data_import_main(argc - 1, argv + 1);
    if (!strcmp(sub, "gen"))
        return data_gen_main(argc - 1, argv + 1);
    if (!strcmp(sub, "stats"))
        return data_stats_main(argc - 1, argv + 1);
    if (!strcmp(sub, "check"))
        return data_check_main(argc - 1, argv + 1);
    fatal("unknown data command '%s' (expected import, gen, stats or check)", sub);
}

/* Keep freed memory for the next step. Steps allocate and free buffers of
 * tens of MB; with glibc's defaults these are mmap'd and unmapped every
 * step (page faults each time, unevenly across ranks): measured on HSTU
 * with 128 negatives, 119k -> 145k tokens/s and a bubble of 9% -> 1.6% at
 * 2 ranks. Allocations above 256 MiB are still mapped separately. */
static void tune_allocator(void)
{
#ifndef __SANITIZE_ADDRESS__ /* AddressSanitizer's allocator: its mallopt does nothing, returns 0 */
    if (!mallopt(M_MMAP_THRESHOLD, 256 << 20) || !mallopt(M_TRIM_THRESHOLD, 1 << 30) ||
        !mallopt(M_TOP_PAD, 64 << 20))
        log_warn("mallopt failed: the allocator keeps its defaults");
#endif
}

/* glibc's allocator in transparent huge pages (GLIBC_TUNABLES
 * glibc.malloc.hugetlb=1: read when the process starts, hence the
 * re-execution), for training, which touches hundreds of MB per rank: one
 * page fault per 2 MiB instead of per 4 KiB. On the 2-core VMs this is
 * developed on a first touch costs ~30 us per 4 KiB page (measured), and a
 * one-epoch ML-1M run made 79k faults on 2 ranks with 4 KiB pages, 48k with
 * this. Only where the kernel honours madvise (THP enabled) and the
 * environment did not say otherwise. Returns 1 when it changed the
 * environment. */
static int huge_heap_env(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    if (getenv("FREESCALE_HUGE_HEAP_DONE") || (t && strstr(t, "glibc.malloc.hugetlb")))
        return 0;
    char mode[128] = "";
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    size_t n = fread(mode, 1, sizeof mode - 1, f);
    fclose(f);
    mode[n] = '\0';
    if (!strstr(mode, "[madvise]") && !strstr(mode, "[always]"))
        return 0;
    char val[4096];
    snprintf(val, sizeof val, "%s%sglibc.malloc.hugetlb=1", t ? t : "", t && t[0] ? ":" : "");
    return setenv("GLIBC_TUNABLES", val, 1) == 0 && setenv("FREESCALE_HUGE_HEAP_DONE", "1", 1) == 0;
}

/* The environment the libraries read when they load (the BLAS kernels;
 * for train, the allocator's huge pages), set by re-executing the program
 * once (same PID, same arguments) before MPI starts. */
static void prepare_process(int argc, char **argv)
{
    int again = blas_env_prepare();
    if (argc >= 2 && !strcmp(argv[1], "train"))
        again |= huge_heap_env();
    if (!again)
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with what is loaded */
    blas_env_reexec_failed();
}

int main(int argc, char **argv)
{
    prepare_process(argc, argv);
    tune_allocator();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || (!strcmp(cmd, "help") && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "help")) {
        if (!strcmp(argv[2], "params")) {
            params_help(stdout);
            return 0;
        }
        fatal("no help on '%s' (try 'freescale help params')", argv[2]);
    }
    if (!strcmp(cmd, "--version")) {
        char blas[256];
        unsigned maj, min, rel;
        blas_describe(blas, sizeof blas);
        H5get_libversion(&maj, &min, &rel);
        printf("freescale %s\nbackends: %s\nBLAS: %s\nHDF5 %u.%u.%u\n", PACKAGE_VERSION,
               backend_names(), blas, maj, min, rel);
        return 0;
    }
    const char *with_params[] = {"train", "recommend", "export", "score", "params", "plan",
                                 "calibrate"};
    for (size_t i = 0; i < sizeof with_params / sizeof *with_params; i++)
        if (!strcmp(cmd, with_params[i]))
            banner_take_verbose(&argc, argv); /* --verbose: the effective parameters too */
    if (!strcmp(cmd, "train"))
        return train_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "plan"))
        return plan_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "calibrate"))
        return calibrate_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "recommend"))
        return recommend_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "export"))
        return export_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "checkpoint"))
        return ckpt_merge_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "score"))
        return score_main(argc - 1, argv + 1);
    if (!strcmp(cmd, "params"))
        return cmd_params(argc - 1, argv + 1);
    if (!strcmp(cmd, "data"))
        return cmd_data(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) {
        if (argc >= 3 && !strcmp(argv[2], "exchange"))
            return bench_exchange_main(argc - 2, argv + 2);
        fatal("unknown benchmark '%s' (expected: bench exchange)", argc >= 3 ? argv[2] : "");
    }
    fprintf(stderr, "freescale: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
