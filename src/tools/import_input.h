/* import_input: the input layer of 'freescale data import': a file or
 * standard input ("-"), plain or gzip-compressed, read through zlib in large
 * chunks and handed out line by line.
 *
 * zlib recognises gzip data by its header, so a compressed standard input or
 * a compressed file of any name is decompressed; a name ending in ".gz"
 * must hold gzip data. Concatenated gzip members are read as one stream. A
 * truncated or corrupt stream ends the program with "PATH:LINE: ...", LINE
 * being the line that was being read; nothing is handed out from a stream
 * after its error. */
#ifndef FS_IMPORT_INPUT_H
#define FS_IMPORT_INPUT_H

#include <stddef.h>
#include <stdint.h>

struct import_input {
    void *gz;              /* gzFile */
    const char *path;      /* the name in messages: the path, or "<stdin>" */
    int gzip;              /* the data is gzip-compressed (known after the first read) */
    char *buf;             /* [cap] bytes; [beg, end) not handed out yet */
    size_t cap, beg, end;
    int eof;
    int64_t line;          /* number of the line last returned, 1-based */
    int64_t bytes;         /* bytes of (decompressed) text read so far */
};

/* Open PATH ("-" = standard input); fatal() when it cannot be opened. */
void import_input_open(struct import_input *in, const char *path);
/* Next line as s[0 .. len), '\n' included when present; a UTF-8 byte order
 * mark on line 1 is dropped. Returns 0 at the end of the input. */
int import_input_line(struct import_input *in, char **s, size_t *len);
void import_input_close(struct import_input *in);

#endif
