/* import_input: files and standard input, plain or gzip, through zlib,
 * line by line; see import_input.h. */
#include "tools/import_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/check.h"
#include "base/log.h"

#define READ_CHUNK ((size_t)16 << 20) /* bytes per gzread */
#define GZ_BUFFER (1u << 20)          /* zlib's input (and output) buffer */
#define MAX_LINE ((size_t)64 << 20)   /* longer lines: not a text file */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

void import_input_open(struct import_input *in, const char *path)
{
    memset(in, 0, sizeof *in);
    int stdin_ = !strcmp(path, "-");
    in->path = stdin_ ? "<stdin>" : path;
    int fd = stdin_ ? dup(STDIN_FILENO) : open(path, O_RDONLY);
    if (fd < 0)
        fatal("%s: cannot open: %s", in->path, strerror(errno));
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        fatal("%s: cannot open through zlib (out of memory?)", in->path);
    }
    if (gzbuffer(gz, GZ_BUFFER) != 0)
        fatal("%s: zlib: gzbuffer failed", in->path);
    in->gz = gz;
    in->gzip = !gzdirect(gz); /* reads the header */
    if (!in->gzip && !stdin_ && ends_with(path, ".gz"))
        fatal("%s: not gzip data (no gzip header), though the name ends in .gz", path);
    in->cap = READ_CHUNK;
    in->buf = xmalloc(in->cap);
}

void import_input_close(struct import_input *in)
{
    if (in->gz)
        gzclose_r((gzFile)in->gz);
    free(in->buf);
    memset(in, 0, sizeof *in);
}

/* Read more text after in->end; sets eof at the end. The line being read
 * (in->line + 1) names the place of a stream error. */
static void input_fill(struct import_input *in)
{
    size_t want = in->cap - in->end < READ_CHUNK ? in->cap - in->end : READ_CHUNK;
    int got = gzread((gzFile)in->gz, in->buf + in->end, (unsigned)want);
    int zerr = Z_OK;
    const char *msg = got <= 0 ? gzerror((gzFile)in->gz, &zerr) : NULL;
    if (got < 0 || (got == 0 && zerr != Z_OK)) {
        long long line = (long long)in->line + 1;
        const char *colon = msg ? strstr(msg, ": ") : NULL;
        if (colon && !strncmp(msg, "<fd:", 4)) /* zlib names the stream "<fd:N>" */
            msg = colon + 2;
        if (zerr == Z_ERRNO)
            fatal("%s:%lld: read error: %s", in->path, line, strerror(errno));
        if (zerr == Z_BUF_ERROR)
            fatal("%s:%lld: gzip data ends early (truncated file?): zlib: %s", in->path, line,
                  msg);
        fatal("%s:%lld: corrupt gzip data: zlib: %s", in->path, line, msg);
    }
    if (got == 0)
        in->eof = 1;
    in->end += (size_t)got;
    in->bytes += got;
}

int import_input_line(struct import_input *in, char **s, size_t *len)
{
    for (;;) {
        size_t have = in->end - in->beg;
        char *nl = have ? memchr(in->buf + in->beg, '\n', have) : NULL;
        if (nl || (in->eof && have)) {
            *s = in->buf + in->beg;
            *len = nl ? (size_t)(nl + 1 - *s) : have;
            in->beg += *len;
            if (++in->line == 1 && *len >= 3 && !memcmp(*s, "\xEF\xBB\xBF", 3)) {
                *s += 3;
                *len -= 3;
            }
            return 1;
        }
        if (in->eof)
            return 0;
        memmove(in->buf, in->buf + in->beg, have);
        in->beg = 0;
        in->end = have;
        if (in->end == in->cap) {
            if (in->cap >= MAX_LINE)
                fatal("%s:%lld: line longer than %zu MiB (is this a text file?)", in->path,
                      (long long)in->line + 1, MAX_LINE >> 20);
            in->cap *= 2;
            in->buf = xrealloc(in->buf, in->cap);
        }
        input_fill(in);
    }
}
