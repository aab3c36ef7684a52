/* fuzz_readers: a bounded mutational fuzzer of the readers of untrusted
 * input: parameter files (params_read_file), CSV and JSON-lines
 * interactions (data import), HDF5 datasets (dataset_open, validate, read)
 * and checkpoints (checkpoint_verify).
 *
 *   fuzz_readers READER SEED_DIR SECONDS FAIL_DIR
 *
 * READER is params | csv | jsonl | dataset | checkpoint. Each execution
 * takes a seed file of SEED_DIR (round robin), applies one to three
 * mutations (bit flips, byte overwrites, truncation, block duplication and
 * deletion, huge and negative numbers, long lines, invalid UTF-8, NUL
 * bytes), writes it to a scratch directory and runs the reader on it in a
 * forked child (no MPI: the readers run serially), for SECONDS in all.
 * Every outcome must be a correct acceptance (exit 0) or a clean refusal
 * (exit 1 with a message naming the file, and nothing left behind: for
 * import, no output file); a signal, a sanitizer report (its exit code,
 * 86 in .ci/run), any other exit code, a hang (10 s) or a left-over file is
 * a failure: the input is kept in FAIL_DIR and the program exits 1. A
 * sanitizer report whose innermost frame (past the sanitizer's own and
 * libc's string functions) lies inside libhdf5 is a failure like any other
 * (the readers check what HDF5 1.10 would trust before it reads: see
 * doc/robustness.md), said to be "inside HDF5" and counted among the
 * failures as well as apart. Every seed is also run once unmutated
 * (regression cases live among the seeds). Prints "READER: N executions,
 * A accepted, R refused, F failures (L of them inside HDF5)". */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/params.h"
#include "data/dataset.h"
#include "tools/data_tools.h"
#include "ckpt/ckpt.h"

#define MAX_SEEDS 64
#define FUZZ_MAX_INPUT (4 << 20)
#define HANG_SECONDS 10

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) /* xorshift64* */
{
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717ull;
}

static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

struct buf {
    unsigned char *p;
    size_t n, cap;
};

static void buf_insert(struct buf *b, size_t at, const void *src, size_t n)
{
    if (b->n + n > FUZZ_MAX_INPUT)
        return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) {
            perror("fuzz_readers");
            exit(2);
        }
    }
    memmove(b->p + at + n, b->p + at, b->n - at);
    memcpy(b->p + at, src, n);
    b->n += n;
}

static void buf_erase(struct buf *b, size_t at, size_t n)
{
    if (at + n > b->n)
        n = b->n - at;
    memmove(b->p + at, b->p + at + n, b->n - at - n);
    b->n -= n;
}

/* One mutation. HDF5 inputs get mostly byte-level ones (their structure is
 * binary); text inputs also get the textual ones. */
static void mutate(struct buf *b, int text)
{
    static const char *numbers[] = {"99999999999999999999999", "-9223372036854775809",
                                    "9223372036854775807", "-1", "0", "1e308", "nan", "-0",
                                    "18446744073709551616", "4294967296", "1e-400"};
    static const char *junk[] = {"\xc3\x28", "\xff\xfe", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                 "\0", "\r\n", "\"", "::", ",,,,", "[", "=", "\n[x]\n"};
    const size_t at = below(b->n + 1);
    switch (below(text ? 9 : 5)) {
    case 0: /* bit flips */
        for (int k = 0, n = 1 + (int)below(8); k < n && b->n; k++)
            b->p[below(b->n)] ^= (unsigned char)(1u << below(8));
        break;
    case 1: /* overwrite bytes with an interesting value */
        for (int k = 0, n = 1 + (int)below(4); k < n && b->n; k++) {
            static const unsigned char v[] = {0, 0xff, 0x7f, 0x80, 1, 0xfe};
            b->p[below(b->n)] = v[below(sizeof v)];
        }
        break;
    case 2: /* truncate */
        b->n = below(b->n + 1);
        break;
    case 3: { /* duplicate a block */
        size_t n = 1 + below(b->n - at < 4096 ? b->n - at + 1 : 4096);
        if (at + n <= b->n) {
            unsigned char *copy = malloc(n);
            memcpy(copy, b->p + at, n);
            buf_insert(b, below(b->n + 1), copy, n);
            free(copy);
        }
        break;
    }
    case 4: /* delete a block */
        buf_erase(b, at, 1 + below(256));
        break;
    case 5: { /* a huge or odd number */
        const char *s = numbers[below(sizeof numbers / sizeof *numbers)];
        buf_insert(b, at, s, strlen(s));
        break;
    }
    case 6: { /* a long line */
        size_t n = 1000 + below(70000);
        char *s = malloc(n);
        memset(s, "a9,:"[below(4)], n);
        buf_insert(b, at, s, n);
        free(s);
        break;
    }
    case 7: { /* invalid UTF-8, NUL, quoting and separators */
        const char *s = junk[below(sizeof junk / sizeof *junk)];
        buf_insert(b, at, s, s[0] ? strlen(s) : 1);
        break;
    }
    case 8: { /* duplicate a whole line */
        size_t s = at, e = at;
        while (s > 0 && b->p[s - 1] != '\n')
            s--;
        while (e < b->n && b->p[e] != '\n')
            e++;
        if (e < b->n)
            e++;
        if (e > s) {
            unsigned char *copy = malloc(e - s);
            memcpy(copy, b->p + s, e - s);
            buf_insert(b, e, copy, e - s);
            free(copy);
        }
        break;
    }
    }
}

/* --- the readers, run in the child ------------------------------------------------ */

static int run_params(const char *in, const char *out)
{
    (void)out;
    static struct params p;
    char err[1024];
    params_defaults(&p);
    if (params_read_file(&p, in, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}

static int run_import(const char *in, const char *out, const char *format)
{
    char *argv[] = {"import", "--format", (char *)format, (char *)in, "-o", (char *)out, NULL};
    return data_import_main(6, argv);
}

static int run_csv(const char *in, const char *out) { return run_import(in, out, "csv"); }
static int run_jsonl(const char *in, const char *out) { return run_import(in, out, "jsonl"); }

static int run_dataset(const char *in, const char *out)
{
    (void)out;
    struct dataset ds;
    char err[1024];
    if (dataset_open(&ds, in, err, sizeof err) || dataset_validate(&ds, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    dataset_close(&ds);
    return 0;
}

static int run_checkpoint(const char *in, const char *out)
{
    (void)out;
    char err[1024];
    if (checkpoint_verify(in, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    return 0;
}

static const struct reader {
    const char *name, *ext;
    int text;
    int (*run)(const char *in, const char *out);
} readers[] = {
    {"params", "in", 1, run_params},       {"csv", "csv", 1, run_csv},
    {"jsonl", "jsonl", 1, run_jsonl},      {"dataset", "h5", 0, run_dataset},
    {"checkpoint", "h5", 0, run_checkpoint},
};

/* --- the driver ----------------------------------------------------------------- */

static int read_file(const char *path, struct buf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    b->n = 0;
    unsigned char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_insert(b, b->n, chunk, n);
    fclose(f);
    return 0;
}

static int write_file(const char *path, const struct buf *b)
{
    FILE *f = fopen(path, "wb");
    if (!f || (b->n && fwrite(b->p, 1, b->n, f) != b->n) || fclose(f) != 0)
        return -1;
    return 0;
}

/* Files in dir other than keep (left behind by the reader). */
static int leftovers(const char *dir, const char *keep, char *first, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, keep) ||
            !strcmp(e->d_name, "stderr"))
            continue;
        if (n++ == 0)
            snprintf(first, len, "%s", e->d_name);
    }
    if (d)
        closedir(d);
    return n;
}

enum outcome { OK_ACCEPT, OK_REFUSE, BAD, BAD_LIBRARY };

/* The innermost frame of a sanitizer report is in libhdf5. */
static int in_hdf5(const char *report)
{
    for (const char *l = strstr(report, "    #"); l; l = strstr(l + 1, "    #")) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
        if (strstr(line, "asan") || strstr(line, "sanitizer") || strstr(line, "interceptor") ||
            strstr(line, "memcpy") || strstr(line, "memmove") || strstr(line, "libc.so"))
            continue;
        return strstr(line, "libhdf5") != NULL;
    }
    return 0;
}

/* Run the reader on dir/input.EXT; why[len] says what went wrong (BAD). */
static enum outcome execute(const struct reader *r, const char *dir, char *why, size_t len)
{
    char in[4200], out[4200], errpath[4200];
    snprintf(in, sizeof in, "%s/input.%s", dir, r->ext);
    snprintf(out, sizeof out, "%s/out.h5", dir);
    snprintf(errpath, sizeof errpath, "%s/stderr", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(2);
    }
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 1);
        exit(r->run(in, out));
    }
    int status = 0;
    for (int waited = 0;; waited++) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (waited >= HANG_SECONDS * 1000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            snprintf(why, len, "hang (over %d s)", HANG_SECONDS);
            return BAD;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    struct buf e = {0};
    read_file(errpath, &e);
    buf_insert(&e, e.n, "", 1);
    enum outcome o = BAD;
    if (WIFSIGNALED(status))
        snprintf(why, len, "killed by signal %d", WTERMSIG(status));
    else if (WEXITSTATUS(status) == 0)
        o = OK_ACCEPT;
    else if (WEXITSTATUS(status) != 1)
        snprintf(why, len, "exit status %d (a sanitizer report?): %.300s", WEXITSTATUS(status),
                 (char *)e.p);
    if (o == BAD && (WIFSIGNALED(status) || WEXITSTATUS(status) != 1) && in_hdf5((char *)e.p)) {
        free(e.p);
        return BAD_LIBRARY;
    }
    else if (!strstr((char *)e.p, in))
        snprintf(why, len, "refused without naming the file: %.300s", (char *)e.p);
    else
        o = OK_REFUSE;
    char first[256] = "", keep[64];
    snprintf(keep, sizeof keep, "input.%s", r->ext);
    if (o == OK_ACCEPT)
        unlink(out); /* an accepted import writes its output */
    if (o != BAD && leftovers(dir, keep, first, sizeof first)) {
        snprintf(why, len, "%s left behind after %s", first,
                 o == OK_ACCEPT ? "an acceptance" : "a refusal");
        o = BAD;
    }
    free(e.p);
    return o;
}

/* Clear dir of everything but nothing (between executions). */
static void clean(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char p[4200];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: fuzz_readers params|csv|jsonl|dataset|checkpoint SEED_DIR "
                        "SECONDS FAIL_DIR\n");
        return 2;
    }
    const struct reader *r = NULL;
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++)
        if (!strcmp(argv[1], readers[i].name))
            r = &readers[i];
    if (!r) {
        fprintf(stderr, "fuzz_readers: unknown reader '%s'\n", argv[1]);
        return 2;
    }
    const double budget = atof(argv[3]);
    struct buf seeds[MAX_SEEDS] = {{0}};
    char names[MAX_SEEDS][256];
    int ns = 0;
    DIR *d = opendir(argv[2]);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && ns < MAX_SEEDS) {
        char p[4200];
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", argv[2], e->d_name);
        snprintf(names[ns], sizeof names[ns], "%s", e->d_name);
        if (read_file(p, &seeds[ns]) == 0)
            ns++;
    }
    if (d)
        closedir(d);
    if (ns == 0) {
        fprintf(stderr, "fuzz_readers: no seeds in %s\n", argv[2]);
        return 2;
    }
    char dir[] = "/tmp/fuzz_readers.XXXXXX";
    if (!mkdtemp(dir) || (mkdir(argv[4], 0777) != 0 && errno != EEXIST)) {
        perror("fuzz_readers: scratch or failure directory");
        return 2;
    }
    const char *fixed = getenv("FUZZ_RNG"); /* hex: replay a run's mutations (as it printed) */
    if (fixed)
        g_rng = strtoull(fixed, NULL, 16);
    else
        g_rng ^= (uint64_t)getpid() * 0x100000001b3ull ^ (uint64_t)time(NULL);
    const uint64_t seed = g_rng;
    long execs = 0, acc = 0, ref = 0, bad = 0, lib = 0;
    const double t0 = now_s();
    struct buf cur = {0};
    for (long i = 0; i < ns || now_s() - t0 < budget; i++) {
        const int k = (int)(i % ns);
        cur.n = 0;
        buf_insert(&cur, 0, seeds[k].p, seeds[k].n);
        for (int m = 0, nm = i < ns ? 0 : 1 + (int)below(3); m < nm; m++)
            mutate(&cur, r->text);
        char in[4200], why[600] = "";
        snprintf(in, sizeof in, "%s/input.%s", dir, r->ext);
        clean(dir);
        if (write_file(in, &cur)) {
            perror(in);
            return 2;
        }
        enum outcome o = execute(r, dir, why, sizeof why);
        execs++;
        acc += o == OK_ACCEPT;
        ref += o == OK_REFUSE;
        if (o == BAD || o == BAD_LIBRARY) {
            char keep[4400];
            snprintf(keep, sizeof keep, "%s/%s-%ld-from-%s", argv[4], r->name, execs, names[k]);
            write_file(keep, &cur);
            fprintf(stderr, "fuzz_readers %s: %s on %s (kept as %s): %s\n", r->name,
                    o == BAD ? "FAILURE" : "FAILURE inside HDF5", i < ns ? "a seed" :
                    "a mutated seed", keep, o == BAD ? why : "sanitizer report in libhdf5");
            bad++;
            lib += o == BAD_LIBRARY;
        }
    }
    clean(dir);
    rmdir(dir);
    printf("%s: %ld executions in %.0f s (%d seeds, rng %llx): %ld accepted, %ld refused, %ld "
           "failures (%ld of them inside HDF5)\n",
           r->name, execs, now_s() - t0, ns, (unsigned long long)seed, acc, ref, bad, lib);
    for (int k = 0; k < ns; k++)
        free(seeds[k].p);
    free(cur.p);
    return bad ? 1 : 0;
}
