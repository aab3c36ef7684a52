/* ckpt_run: run identity, the checkpoint directory at start, resume = auto's
 * choice and retention; see ckpt_run.h. */
#include "ckpt/ckpt_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/check.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/tmpguard.h"
#include "data/h5io.h"
#include "data/stream_files.h"
#include "ckpt/ckpt.h"

/* The parameters a resume must keep: what a step, a position and a table
 * row mean (and which windows the stream schedule cuts). The learning rate,
 * epochs, max_steps, data.stream_end, evaluation, overlap and balance may
 * change. */
static const enum param_id run_params[] = {
    P_model_type, P_model_dim, P_model_layers, P_model_heads, P_data_max_seq_len,
    P_data_split, P_data_timestamps, P_train_loss, P_train_negatives, P_train_negatives_from,
    P_train_batch_size, P_train_seed, P_embedding_optimizer, P_embedding_subspace_k,
    P_embedding_subspace_basis,
};
/* ... and, with train.schedule = stream, which windows it cuts (after the
 * others: an epochs run's identity is what it was before the schedule) */
static const enum param_id stream_params[] = {P_train_schedule, P_data_window,
                                              P_data_stream_start};

#define NAMES_SHOWN 6 /* checkpoints named in a message, then "and N more" */

/* --- identity -------------------------------------------------------------------- */

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#define FNV_BASIS 0xcbf29ce484222325ull

/* A parameter's value as text, the same whatever way it was written. */
static void param_text(const struct params *p, enum param_id i, char *buf, size_t len)
{
    const struct param_def *d = &param_defs[i];
    switch (d->type) {
    case PT_INT:
    case PT_BOOL: snprintf(buf, len, "%lld", (long long)p->v[i].i); break;
    case PT_FLOAT: snprintf(buf, len, "%.17g", p->v[i].f); break;
    default: snprintf(buf, len, "%s", p->str[i]); break;
    }
}

void ckpt_run_identity(const struct trainer *tr, struct ckpt_run *run)
{
    const struct dataset *ds = &tr->ds;
    char err[1024];
    if (tr->files && !(ds = stream_files_dataset(tr->files, 0, err, sizeof err)))
        fatal("checkpoint: %s", err); /* window files: the stream's first file, which stays */
    const uint64_t lengths =
        fnv1a(FNV_BASIS, ds->offsets, (size_t)(ds->num_users + 1) * sizeof *ds->offsets);
    size_t n = (size_t)snprintf(run->params, sizeof run->params,
                                "data = %lld users, %lld items, %lld events, %s, lengths %016llx\n",
                                (long long)ds->num_users, (long long)ds->num_items,
                                (long long)ds->num_events,
                                ds->has_timestamps ? "timestamps" : "no timestamps",
                                (unsigned long long)lengths);
    const size_t nrun = sizeof run_params / sizeof *run_params;
    const size_t nall = nrun + (strcmp(params_str(tr->p, P_train_schedule), "stream") ? 0
                                : sizeof stream_params / sizeof *stream_params);
    for (size_t k = 0; k < nall && n < sizeof run->params; k++) {
        char v[PARAM_STR_MAX];
        const enum param_id id = k < nrun ? run_params[k] : stream_params[k - nrun];
        const struct param_def *d = &param_defs[id];
        param_text(tr->p, id, v, sizeof v);
        n += (size_t)snprintf(run->params + n, sizeof run->params - n, "%s.%s = %s\n", d->section,
                              d->key, v);
    }
    /* What a row of a table means (a dense row id, or an id of a dynamic
     * table): a line each when a table is dynamic (a dense run's identity
     * is what it was before dynamic tables). embedding.capacity, admit and
     * evict are the tables' policies, which a resume may change (a shard
     * that cannot hold the rows it reads is refused by name). */
    const int dyn_items = params_i64(tr->p, P_embedding_dynamic) != 0;
    const char *dyn_feat = params_str(tr->p, P_features_dynamic);
    if (dyn_items && n < sizeof run->params)
        n += (size_t)snprintf(run->params + n, sizeof run->params - n, "embedding.dynamic = on\n");
    if (dyn_feat[0] && n < sizeof run->params)
        n += (size_t)snprintf(run->params + n, sizeof run->params - n, "features.dynamic = %s\n",
                              dyn_feat);
    /* Which negatives a position draws (train.shared_negatives: a block's
     * draw): a line when on, so that a run without it keeps the identity
     * it had before the line (a checkpoint without it: 0, absent_value). */
    const int64_t shared = params_i64(tr->p, P_train_shared_negatives);
    if (shared > 0 && n < sizeof run->params)
        n += (size_t)snprintf(run->params + n, sizeof run->params - n,
                              "train.shared_negatives = %lld\n", (long long)shared);
    if (n >= sizeof run->params)
        fatal("checkpoint: the run's parameters exceed %d bytes", CKPT_RUN_PARAMS_MAX);
    snprintf(run->id, sizeof run->id, "%016llx",
             (unsigned long long)fnv1a(FNV_BASIS, run->params, strlen(run->params)));
}

int64_t ckpt_run_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void host_name(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0 || !buf[0])
        snprintf(buf, len, "localhost");
    buf[len - 1] = '\0';
    for (char *c = buf; *c; c++) /* a name part, whatever the host calls itself */
        if (*c == '/')
            *c = '_';
}

void ckpt_run_tmp_name(const char *final, char *tmp, size_t len)
{
    char host[256];
    host_name(host, sizeof host);
    if (snprintf(tmp, len, "%s.tmp.%s.%ld", final, host, (long)getpid()) >= (int)len)
        fatal("%s: path too long for its temporary", final);
}

/* Where line "key = " of text is (NULL: absent). */
static const char *find_key(const char *text, const char *key)
{
    const char *at = strstr(text, key);
    while (at && at != text && at[-1] != '\n')
        at = strstr(at + 1, key);
    return at;
}

/* The parameter of line name (n bytes) of an identity ("section.key"),
 * or -1 (the data line; a name of a later freescale's identity). */
static int line_param(const char *name, size_t n)
{
    for (int i = 0; i < P_COUNT; i++) {
        const size_t sl = strlen(param_defs[i].section);
        if (sl < n && !strncmp(name, param_defs[i].section, sl) && name[sl] == '.' &&
            strlen(param_defs[i].key) == n - sl - 1 &&
            !strncmp(name + sl + 1, param_defs[i].key, n - sl - 1))
            return i;
    }
    return -1;
}

/* What the absence of line name (n bytes) from an identity means: its
 * parameter's default (a line is written only when not the default, or
 * was added to the identity later, when a checkpoint without it trained
 * with the default) as text; "(not set)" for a name that is no parameter
 * of this build. */
static const char *absent_value(const char *name, size_t n)
{
    const int i = line_param(name, n);
    if (i < 0)
        return "(not set)";
    return param_defs[i].def[0] ? param_defs[i].def : "(not set)";
}

/* Whether value v (vl bytes) of line name is what its absence means: its
 * parameter's default, compared as the parameter's type (a switch's on/1,
 * a number's value, a word's text). */
static int means_absent(const char *name, size_t n, const char *v, size_t vl)
{
    const int i = line_param(name, n);
    if (i < 0)
        return 0;
    const struct param_def *d = &param_defs[i];
    char text[PARAM_STR_MAX], *end;
    snprintf(text, sizeof text, "%.*s", (int)vl, v);
    switch (d->type) {
    case PT_BOOL: {
        const int on = !strcmp(text, "on") || !strcmp(text, "1");
        return (on || !strcmp(text, "off") || !strcmp(text, "0")) && on == !strcmp(d->def, "on");
    }
    case PT_INT: {
        const long long x = strtoll(text, &end, 10);
        return text[0] && !*end && x == strtoll(d->def, NULL, 10);
    }
    case PT_FLOAT: {
        const double x = strtod(text, &end);
        return text[0] && !*end && x == strtod(d->def, NULL);
    }
    default: return !strcmp(text, d->def);
    }
}

/* The lines only here ("name: ABSENT there, B here", ABSENT what the
 * absence means: absent_value), then those of there that differ from
 * here's ("name: A there, B here", or "A there, ABSENT here"), into buf;
 * a line on one side only whose value is what its absence means
 * (means_absent) does not differ. With both, "" when none differs;
 * without, "another run identity" then. */
static void differences(const char *there, const char *here, int both, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    char *mine_copy = xstrdup(here), *msave = NULL;
    for (char *line = strtok_r(mine_copy, "\n", &msave); line;
         line = strtok_r(NULL, "\n", &msave)) {
        const char *eq = strstr(line, " = ");
        if (!eq)
            continue;
        const size_t nl = (size_t)(eq - line);
        char key[128];
        snprintf(key, sizeof key, "%.*s = ", (int)nl, line);
        if (find_key(there, key) || means_absent(line, nl, eq + 3, strlen(eq + 3)))
            continue;
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%.*s: %s there, %s here", n ? "; " : "",
                                  (int)nl, line, absent_value(line, nl), eq + 3);
    }
    free(mine_copy);
    char *copy = xstrdup(there), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *eq = strstr(line, " = ");
        if (!eq)
            continue;
        const size_t nl = (size_t)(eq - line);
        char key[128];
        snprintf(key, sizeof key, "%.*s = ", (int)nl, line);
        const char *mine = find_key(here, key);
        const char *v = mine ? mine + strlen(key) : absent_value(line, nl);
        const size_t vl = mine ? strcspn(v, "\n") : strlen(v);
        if (mine ? strlen(eq + 3) == vl && !strncmp(eq + 3, v, vl)
                 : means_absent(line, nl, eq + 3, strlen(eq + 3)))
            continue;
        if (n < len)
            n += (size_t)snprintf(buf + n, len - n, "%s%.*s: %s there, %.*s here",
                                  n ? "; " : "", (int)nl, line, eq + 3, (int)vl, v);
    }
    free(copy);
    if (!buf[0] && !both)
        snprintf(buf, len, "another run identity");
}

/* --- the directory at start -------------------------------------------------------- */

/* mkdir -p dir */
static int make_dirs(const char *dir)
{
    char p[4200];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return mkdir(p, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* name = BASE.tmp.HOST.PID (or BASE.tmp.PID, before hosts were recorded),
 * BASE a checkpoint's name (ckpt-STEP.h5, best.h5) or the rate probe's. */
static int tmp_parse(const char *name, char *host, size_t hostlen, long *pid)
{
    const char *t = strstr(name, ".tmp.");
    if (!t)
        return 0;
    const size_t bl = (size_t)(t - name);
    long long step;
    int used = 0;
    const int ckpt = sscanf(name, "ckpt-%lld.h5%n", &step, &used) == 1 && (size_t)used == bl &&
                     name[5] >= '0' && name[5] <= '9';
    if (!ckpt && !(bl == 7 && !strncmp(name, "best.h5", 7)) &&
        !(bl == 10 && !strncmp(name, "write-rate", 10)))
        return 0;
    const char *rest = t + 5, *dot = strrchr(rest, '.');
    const char *digits = dot ? dot + 1 : rest;
    char *end;
    errno = 0;
    *pid = strtol(digits, &end, 10);
    if (!*digits || *end || errno || *pid <= 0)
        return 0;
    snprintf(host, hostlen, "%.*s", dot ? (int)(dot - rest) : 0, rest);
    return 1;
}

/* Report and remove the temporaries of dir whose writer is gone. */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char me[256];
    host_name(me, sizeof me);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char host[256], path[4200];
        long pid;
        if (!tmp_parse(e->d_name, host, sizeof host, &pid))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        const int here = !host[0] || !strcmp(host, me);
        if (here && kill((pid_t)pid, 0) == 0)
            log_warn("output.checkpoint_dir: %s is being written by process %ld (another run in "
                     "this directory?)", path, pid);
        else if (!here)
            log_warn("output.checkpoint_dir: %s was left by process %ld on host %s: not "
                     "removed (it may still be writing); remove it once no run writes there",
                     path, pid, host);
        else if (unlink(path) == 0)
            log_info("output.checkpoint_dir: removed %s, an unfinished checkpoint whose writer "
                     "(process %ld) is gone", path, pid);
        else
            log_warn("output.checkpoint_dir: cannot remove the unfinished %s: %s", path,
                     strerror(errno));
    }
    closedir(d);
}

/* Write n floats as a checkpoint writes its table (rows of 256 values in
 * chunks of 1 MiB with Fletcher-32 checksums) into the HDF5 file tmp, and
 * fsync it; 0, or an errno (EIO when HDF5 says no more). */
static int probe_hdf5(const char *tmp, size_t n)
{
    const int64_t cols = 256, rows = (int64_t)((n + 255) / 256), block = 4096;
    int e = 0;
    float *buf = xmalloc((size_t)(block * cols) * sizeof *buf);
    for (int64_t i = 0; i < block * cols; i++)
        buf[i] = (float)(i % 977) * 1e-3f;
    struct h5io h; /* no on_fail: the calls return -1, h.errnum says why */
    if (h5io_create(&h, tmp, NULL, H5IO_CHECKSUMMED, NULL, NULL) == 0) {
        const struct h5io_layout lay = {.chunk_rows = 1024 < rows ? 1024 : rows, .checksum = 1};
        hid_t d = h5io_dset(&h, h.f, "rows", H5T_IEEE_F32LE, rows, cols, &lay);
        for (int64_t r = 0; d >= 0 && !h.failed && r < rows; r += block)
            h5io_write_rows(&h, d, H5T_NATIVE_FLOAT, r, 1, r + block < rows ? block : rows - r,
                            cols, buf);
        h5io_close_obj(&h, d);
    }
    h5io_close(&h);
    if (h.failed)
        e = h.errnum ? h.errnum : EIO;
    free(buf);
    int fd = e ? -1 : open(tmp, O_RDONLY);
    if (!e && (fd < 0 || fsync(fd) != 0))
        e = errno;
    if (fd >= 0)
        close(fd);
    return e;
}

/* Create a file in dir (refused: -1 with err), then time a write of
 * min(bytes, 64 MiB) the way a checkpoint writes (probe_hdf5) and remove
 * it: *rate in bytes/s (0, with a warning, when the write fails: a full
 * disk, say, which the checkpoints would meet too). The gathers of the
 * table's rows to rank 0 are not in it. */
static int probe_rate(const char *dir, double bytes, double *rate, char *err, size_t len)
{
    const double most = 64.0 * 1048576.0;
    const size_t n = (size_t)((bytes > most ? most : bytes < 4 ? 4 : bytes) / 4);
    char base[4200], tmp[4600];
    snprintf(base, sizeof base, "%s/write-rate", dir);
    ckpt_run_tmp_name(base, tmp, sizeof tmp);
    *rate = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        return errorf(err, len, "output.checkpoint_dir = %s: cannot write there: %s", dir,
                      strerror(errno));
    close(fd);
    tmpguard_begin(tmp, 0);
    const double t0 = clock_seconds();
    const int e = probe_hdf5(tmp, n);
    const double dt = clock_seconds() - t0;
    unlink(tmp);
    tmpguard_end();
    if (e)
        log_warn("output.checkpoint_dir = %s: a test write of %.2f MB failed: %s; the "
                 "checkpoints will fail the same way unless that changes", dir,
                 (double)n * 4 / 1e6, strerror(e));
    else
        *rate = (double)n * 4 / (dt > 1e-6 ? dt : 1e-6);
    return 0;
}

int ckpt_run_prepare_dir(const char *dir, double bytes, double *rate, char *err, size_t len)
{
    if (make_dirs(dir) != 0)
        return errorf(err, len, "output.checkpoint_dir = %s: cannot create: %s", dir,
                      strerror(errno));
    remove_stale(dir);
    return probe_rate(dir, bytes, rate, err, len);
}

void ckpt_run_missing(const char *dir, char *top, size_t len)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s", dir);
    top[0] = '\0';
    for (char *s = p + 1;; s++)
        if (*s == '/' || *s == '\0') {
            const char c = *s;
            *s = '\0';
            if (stat(p, &st) != 0) {
                snprintf(top, len, "%s", p);
                return;
            }
            if (!(*s = c))
                return;
        }
}

void ckpt_run_unmake(const char *dir, const char *top)
{
    char p[4200];
    snprintf(p, sizeof p, "%s", dir);
    const size_t n = strlen(top);
    while (top[0] && strlen(p) >= n && rmdir(p) == 0 && strlen(p) > n) {
        char *s = strrchr(p, '/');
        if (!s)
            return;
        *s = '\0';
    }
}

/* --- what the directory holds ---------------------------------------------------- */

struct held {
    char name[256];
    struct ckpt_identity id;
    int ok;                 /* the identity was read */
    char why[512];          /* otherwise: the error */
};

/* A checkpoint's name: ckpt-STEP.h5, or ckpt-STEP-RUNID.h5 (a run's
 * beside another run's of the same step, output.shared_dir), exactly:
 * temporaries (NAME.tmp.HOST.PID) never match. */
static int ckpt_name(const char *name)
{
    long long step;
    int n = 0;
    if (sscanf(name, "ckpt-%lld%n", &step, &n) != 1 || step < 0 || name[5] < '0' || name[5] > '9')
        return 0;
    const char *rest = name + n;
    if (rest[0] == '-' && strspn(rest + 1, "0123456789abcdef") == 16)
        rest += 17;
    return !strcmp(rest, ".h5");
}

/* The checkpoints of dir (and best.h5) with their identities. */
static int64_t scan(const char *dir, struct held **out)
{
    int64_t n = 0, cap = 16;
    struct held *h = xcalloc((size_t)cap, sizeof *h);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (!ckpt_name(e->d_name) && strcmp(e->d_name, "best.h5"))
            continue;
        if (n == cap) {
            h = xrealloc(h, (size_t)(cap *= 2) * sizeof *h);
            memset(h + n, 0, (size_t)(cap - n) * sizeof *h);
        }
        char path[4300];
        snprintf(h[n].name, sizeof h[n].name, "%s", e->d_name);
        snprintf(path, sizeof path, "%s/%s", dir, h[n].name);
        h[n].ok = checkpoint_identity(path, &h[n].id, h[n].why, sizeof h[n].why) == 0;
        n++;
    }
    if (d)
        closedir(d);
    *out = h;
    return n;
}

void ckpt_run_path(const char *dir, const struct ckpt_run *run, int64_t step, char *path,
                   size_t len)
{
    struct ckpt_identity id;
    char err[1024];
    snprintf(path, len, "%s/ckpt-%lld.h5", dir, (long long)step);
    if (access(path, F_OK) == 0 && (checkpoint_identity(path, &id, err, sizeof err) != 0 ||
                                    strcmp(id.run_id, run->id)))
        snprintf(path, len, "%s/ckpt-%lld-%s.h5", dir, (long long)step, run->id);
}

/* newest by write order first (then the larger step) */
static int by_written_desc(const void *a, const void *b)
{
    const struct held *x = a, *y = b;
    if (x->id.written_ns != y->id.written_ns)
        return x->id.written_ns < y->id.written_ns ? 1 : -1;
    return x->id.step < y->id.step ? 1 : x->id.step > y->id.step ? -1 : 0;
}

static int is_ckpt(const struct held *h) { return strcmp(h->name, "best.h5") != 0; }

/* "a, b, c and N more" of the names of h[] with another run's identity */
static int others(const struct held *h, int64_t n, const struct ckpt_run *run, char *names,
                  size_t len, char *diff, size_t dlen)
{
    int count = 0;
    size_t k = 0;
    names[0] = diff[0] = '\0';
    for (int64_t i = 0; i < n; i++) {
        if (!h[i].ok || !strcmp(h[i].id.run_id, run->id))
            continue;
        if (count < NAMES_SHOWN && k < len)
            k += (size_t)snprintf(names + k, len - k, "%s%s", count ? ", " : "", h[i].name);
        if (!diff[0]) {
            if (h[i].id.run_id[0])
                differences(h[i].id.run_params, run->params, 0, diff, dlen);
            else
                snprintf(diff, dlen, "no run identity: written by an earlier freescale; resume "
                         "one with train.resume=PATH");
        }
        count++;
    }
    if (count > NAMES_SHOWN && k < len)
        snprintf(names + k, len - k, " and %d more", count - NAMES_SHOWN);
    return count;
}

int ckpt_run_check(const char *dir, const struct ckpt_run *run, int shared, char *err,
                   size_t len)
{
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return errorf(err, len, "output.checkpoint_dir = %s is a file, not a directory: name a "
                      "directory (created if missing)", dir);
    struct held *h;
    const int64_t n = scan(dir, &h);
    char names[512], diff[1024];
    const int nother = others(h, n, run, names, sizeof names, diff, sizeof diff);
    free(h);
    if (nother && !shared)
        return errorf(err, len,
                      "output.checkpoint_dir = %s holds %d checkpoint%s of another run: %s (%s); "
                      "give this run another output.checkpoint_dir, or set "
                      "output.shared_dir=on to write beside them (another run's checkpoints "
                      "are never resumed from nor deleted)",
                      dir, nother, nother == 1 ? "" : "s", names, diff);
    return 0;
}

int ckpt_run_check_fresh(const char *dir, const struct ckpt_run *run, char *err, size_t len)
{
    struct held *h;
    const int64_t n = scan(dir, &h);
    char names[512] = "";
    size_t k = 0;
    int count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!h[i].ok || strcmp(h[i].id.run_id, run->id))
            continue;
        if (count < NAMES_SHOWN && k < sizeof names)
            k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", count ? ", " : "",
                                  h[i].name);
        count++;
    }
    free(h);
    if (count > NAMES_SHOWN && k < sizeof names)
        snprintf(names + k, sizeof names - k, " and %d more", count - NAMES_SHOWN);
    if (!count)
        return 0;
    return errorf(err, len,
                  "output.checkpoint_dir = %s holds %d checkpoint%s of an earlier start with "
                  "this run's identity: %s; a fresh run (train.resume empty) would overwrite "
                  "them, and parameters outside the identity (the learning rate, the epochs, "
                  "...) may differ: continue that run with train.resume=auto, or give this run "
                  "another output.checkpoint_dir, or move them away",
                  dir, count, count == 1 ? "" : "s", names);
}

int ckpt_run_check_best(const char *dir, const struct ckpt_run *run, char *err, size_t len)
{
    char path[4300], why[1024], diff[1024] = "";
    struct ckpt_identity id;
    snprintf(path, sizeof path, "%s/best.h5", dir);
    if (access(path, F_OK) != 0)
        return 0;
    const int ok = checkpoint_identity(path, &id, why, sizeof why) == 0;
    if (ok && !strcmp(id.run_id, run->id))
        return 0;
    if (ok && id.run_id[0])
        differences(id.run_params, run->params, 0, diff, sizeof diff);
    return errorf(err, len,
                  "output.checkpoint_dir = %s: best.h5 is %s%s%s%s: train.keep_best would "
                  "overwrite it; give this run another output.checkpoint_dir, move best.h5 "
                  "away, or set train.keep_best=off",
                  dir, ok ? "another run's" : "unreadable", ok && diff[0] ? " (" : "",
                  ok ? diff : why, ok && diff[0] ? ")" : "");
}

/* params past its "data = " line */
static const char *skip_data(const char *params)
{
    const char *nl = strchr(params, '\n');
    return !strncmp(params, "data = ", 7) && nl ? nl + 1 : params;
}

int ckpt_run_check_resume(const char *path, const struct ckpt_run *run, char *err, size_t len)
{
    struct ckpt_identity id;
    char why[1024], diff[1024];
    if (checkpoint_identity(path, &id, why, sizeof why) != 0)
        return errorf(err, len, "train.resume = %s", why);
    if (!id.run_id[0] || !strcmp(id.run_id, run->id))
        return 0; /* written before checkpoints recorded their run, or this run's */
    /* a name on one side only (a dynamic table's, the stream's, one added
     * to the identity since) is taken only where its value is what its
     * absence means (its default); the dataset (the first line) is not
     * compared: a checkpoint named explicitly may continue on other events
     * of the same items (checkpoint_compatible checks their number) */
    differences(skip_data(id.run_params), skip_data(run->params), 1, diff, sizeof diff);
    if (!diff[0])
        return 0;
    return errorf(err, len,
                  "train.resume = %s is a checkpoint of another run (%s): a resume keeps the "
                  "run's identity (doc/training.md, \"Checkpoints and resume\"); resume it with "
                  "the parameters it was written with, or start afresh",
                  path, diff);
}

int ckpt_run_choose(const char *dir, const struct ckpt_run *run, int is_auto,
                    int (*verify)(void *ctx, const char *path, char *err, size_t len), void *ctx,
                    char *path, size_t pathlen, char *err, size_t len)
{
    struct held *h;
    const int64_t n = scan(dir, &h);
    path[0] = '\0';
    char names[512], diff[1024];
    const int nother = others(h, n, run, names, sizeof names, diff, sizeof diff);
    if (nother)
        log_info("output.checkpoint_dir: %s holds %d checkpoint%s of another run (%s): left "
                 "alone (output.shared_dir=on)", dir, nother, nother == 1 ? "" : "s", names);
    qsort(h, (size_t)n, sizeof *h, by_written_desc);
    int64_t mine = 0;
    for (int64_t i = 0; i < n && is_auto && !path[0]; i++) {
        char p[4300], verr[1024];
        snprintf(p, sizeof p, "%s/%s", dir, h[i].name);
        if (!h[i].ok) {
            log_warn("train.resume = auto: skipping a damaged checkpoint: %s", h[i].why);
            continue;
        }
        if (!is_ckpt(&h[i]) || strcmp(h[i].id.run_id, run->id))
            continue;
        mine++;
        if (verify(ctx, p, verr, sizeof verr) != 0) {
            log_warn("train.resume = auto: skipping a damaged checkpoint: %s", verr);
            continue;
        }
        snprintf(path, pathlen, "%s", p);
        log_info("train.resume = auto: %s, step %lld: this run's newest complete checkpoint "
                 "(by write order)%s%s", p, (long long)h[i].id.step, nother ? "; skipped: " : "",
                 nother ? names : "");
    }
    free(h);
    if (is_auto && mine > 0 && !path[0])
        return errorf(err, len, "train.resume = auto: none of this run's %lld checkpoints in %s "
                      "verifies (see above); move them away to start afresh", (long long)mine,
                      dir);
    return 0;
}

int ckpt_run_newest(const char *dir, const struct ckpt_run *run, char *path, size_t len)
{
    struct held *h;
    const int64_t n = scan(dir, &h);
    qsort(h, (size_t)n, sizeof *h, by_written_desc);
    path[0] = '\0';
    for (int64_t i = 0; i < n && !path[0]; i++)
        if (h[i].ok && is_ckpt(&h[i]) && !strcmp(h[i].id.run_id, run->id))
            snprintf(path, len, "%s/%s", dir, h[i].name);
    free(h);
    return path[0] ? 0 : -1;
}

void ckpt_run_retain(const char *dir, const struct ckpt_run *run, int64_t keep,
                     const char *just_written)
{
    if (keep <= 0)
        return;
    struct held *h;
    const int64_t n = scan(dir, &h);
    qsort(h, (size_t)n, sizeof *h, by_written_desc);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", dir, h[i].name);
        if (!h[i].ok || !is_ckpt(&h[i]) || strcmp(h[i].id.run_id, run->id))
            continue; /* another run's, best.h5, or unreadable: never deleted here */
        if (!strcmp(path, just_written) || kept < keep) {
            kept++;
            continue;
        }
        if (unlink(path) != 0)
            log_warn("output.keep_checkpoints = %lld: cannot delete %s: %s", (long long)keep,
                     path, strerror(errno));
    }
    free(h);
}
