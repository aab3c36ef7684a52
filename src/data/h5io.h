/* h5io: the one HDF5 layer of the program. Checkpoints, datasets and the
 * outputs of recommend and export make their HDF5 calls through it
 * (dataset_h5.c's structure checks, which parse the file's bytes before
 * HDF5 trusts them, are the only other HDF5 code; comm/comm_h5.c sets up the
 * MPI-IO driver).
 *
 * A file is opened either serially (HDF5's default driver, one process:
 * the data tools, verification) or by every rank of a communicator group
 * through MPI-IO (struct h5io.mpi): then every call below that creates,
 * writes or reads is collective (each rank calls it, in the same order,
 * with the same names, shapes and attribute values), and the row writes
 * and reads give each rank's own part (n = 0: none).
 *
 * Writing (h5io_create ...): every call is checked. The first failure
 * fills h->what (the call), h->desc (HDF5's innermost description, or the
 * MPI error text) and h->errnum (errno, from HDF5's error stack or right
 * after the call; 0 when unknown) and calls h->on_fail, which ends the job
 * (checkpoints, outputs) or, when it returns or is NULL, makes the call
 * return -1 (dataset files, whose writer reports the error itself).
 *
 * Reading (h5io_open_read, h5io_attr_read_*, h5io_dset_open ...): anything
 * a file can get wrong (missing objects, classes, shapes, sizes) returns
 * -1 with err naming the file and the object, before anything is read into
 * a buffer. */
#ifndef FS_H5IO_H
#define FS_H5IO_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

struct comm;

/* Create flags */
enum {
    /* superblock 3, v2 object headers, attributes and links kept in the
     * object headers (never in a fractal heap): HDF5 checksums all of the
     * metadata (checkpoints) */
    H5IO_CHECKSUMMED = 1,
    /* under MPI-IO, each rank reads and writes its own large contiguous
     * pieces directly (no aggregation through one rank per node) */
    H5IO_DIRECT = 2,
};

struct h5io {
    hid_t f;
    hid_t xfer;      /* raw data transfer list: collective MPI-IO, else H5P_DEFAULT */
    int mpi;         /* opened by every rank of a group through MPI-IO */
    int checksummed; /* H5IO_CHECKSUMMED */
    char path[4200]; /* the file (for an output: its temporary) */
    /* the first failure of a write */
    int failed, errnum;
    char what[160], desc[256];
    void (*on_fail)(struct h5io *h);
    void *ctx; /* the caller's, for on_fail */
};

/* HDF5 prints no error stacks (the callers report); once per process. */
void h5io_quiet(void);

/* --- files -------------------------------------------------------------------- */

/* Create (truncate) path; c NULL: serially, else by every rank of c's
 * world through MPI-IO. The file is closed with the strong degree (every
 * object goes with it, also when the close fails). 0, or -1 (on_fail). */
int h5io_create(struct h5io *h, const char *path, const struct comm *c, unsigned flags,
                void (*on_fail)(struct h5io *h), void *ctx);
/* Open path (written by this program: no checks) for writing more into
 * its datasets, serially or by every rank of c's world (c); 0, or -1
 * (on_fail). Under MPI-IO, HDF5 1.10 allocates (and fills) the storage of
 * a dataset with no storage yet when it is opened. */
int h5io_open_rw(struct h5io *h, const char *path, const struct comm *c, unsigned flags,
                 void (*on_fail)(struct h5io *h), void *ctx);
/* Open path read-only (c as above; flags: H5IO_DIRECT); 0, or -1 + err
 * naming the file. */
int h5io_open_read(struct h5io *h, const char *path, const struct comm *c, unsigned flags,
                   char *err, size_t errlen);
/* Close (collective under MPI-IO); a write failure (a full disk shows here)
 * goes to on_fail; returns -1 then. */
int h5io_close(struct h5io *h);
/* After a failure: release the file without writing more (serial: closed;
 * MPI-IO: nothing, the job ends, since a close is collective). */
void h5io_abandon(struct h5io *h);
/* The message of the failure: "CALL: DESC" (or "CALL"). */
const char *h5io_failure(const struct h5io *h, char *buf, size_t len);

/* --- writing ------------------------------------------------------------------ */

/* A group (links in its header when checksummed); close with h5io_close_obj. */
hid_t h5io_group(struct h5io *h, hid_t loc, const char *name);
/* Open an existing dataset (of a file being written); -1 on failure. */
hid_t h5io_dset_reopen(struct h5io *h, hid_t loc, const char *name);
/* Close a group, dataset, type, attribute, property list or file id
 * (checked as a write of h; h NULL: a read, unchecked). */
void h5io_close_obj(struct h5io *h, hid_t id);
/* Scalar attributes of loc: int64, double, a string (fixed length, ASCII:
 * checkpoints) and a variable-length UTF-8 string (as h5py writes one). */
int h5io_attr_i64(struct h5io *h, hid_t loc, const char *name, int64_t v);
int h5io_attr_f64(struct h5io *h, hid_t loc, const char *name, double v);
int h5io_attr_str(struct h5io *h, hid_t loc, const char *name, const char *v);
int h5io_attr_utf8(struct h5io *h, hid_t loc, const char *name, const char *v);

/* How a dataset is stored. */
struct h5io_layout {
    int64_t chunk_rows;  /* rows per chunk; 0: contiguous */
    int checksum;        /* Fletcher-32 per chunk */
    int deflate;         /* shuffle + deflate level 1 (deflate_noshuffle: without the shuffle) */
    int deflate_noshuffle;
    int extendible;      /* rows may grow (h5io_append), from 0 */
    int fill_zero;       /* rows never written read as 0 */
};
/* The checkpoint layout: chunks of about 1 MiB, a power of two rows of at
 * most 32768 (and of at most rows), each with its checksum. */
#define H5IO_CHUNK_BYTES ((int64_t)1 << 20)
#define H5IO_CHUNK_MAX_ROWS ((int64_t)1 << 15)
int64_t h5io_chunk_rows(hid_t ftype, int64_t rows, int64_t cols);
/* A dataset of ftype, [rows] (cols 0) or [rows, cols]; -1 on failure. */
hid_t h5io_dset(struct h5io *h, hid_t loc, const char *name, hid_t ftype, int64_t rows,
                int64_t cols, const struct h5io_layout *lay);
/* Write rows r0, r0 + stride, ... (n of them; stride 1: consecutive) of
 * dataset d from buf [n, cols] in memory type mtype. Collective under
 * MPI-IO (n = 0: this rank writes none). 0, or -1. */
int h5io_write_rows(struct h5io *h, hid_t d, hid_t mtype, int64_t r0, int64_t stride, int64_t n,
                    int64_t cols, const void *buf);
/* Write rows[0..n) (ascending) of d from buf [n, cols]: one selection of
 * the runs of consecutive rows; collective under MPI-IO. */
int h5io_write_row_list(struct h5io *h, hid_t d, hid_t mtype, const int64_t *rows, int64_t n,
                        int64_t cols, const void *buf);
/* Extendible 1-D dataset: grow to r0 + n rows and write [r0, r0 + n). */
int h5io_append(struct h5io *h, hid_t d, hid_t mtype, int64_t r0, int64_t n, const void *buf);
/* A copy of type t (close it with h5io_close_obj). */
hid_t h5io_type_copy(struct h5io *h, hid_t t);
/* Fixed-length NUL-padded strings of size bytes (>= 1), UTF-8 or ASCII. */
hid_t h5io_str_type(struct h5io *h, size_t size, int utf8);

/* --- reading ------------------------------------------------------------------ */

/* path (an absolute "/a/b") exists: each of its components. */
int h5io_exists(hid_t loc, const char *path);
int h5io_has_attr(hid_t loc, const char *name);

/* Scalar attributes of loc, checked: present, a scalar, of an integer
 * (any width and sign, fitting int64), float or string class. Strings of
 * fixed or variable length (its global heap checked first), ASCII or
 * UTF-8, into buf[cap] (-1 when longer). Messages name file and object:
 * "FILE: attribute 'NAME' has type float64, expected an integer". */
int h5io_attr_read_i64(hid_t loc, const char *file, const char *name, int64_t *v, char *err,
                       size_t errlen);
int h5io_attr_read_f64(hid_t loc, const char *file, const char *name, double *v, char *err,
                       size_t errlen);
int h5io_attr_read_str(hid_t loc, const char *file, const char *name, char *buf, size_t cap,
                       char *err, size_t errlen);
/* An int64 attribute in [lo, hi]. */
int h5io_attr_read_range(hid_t loc, const char *file, const char *name, int64_t lo, int64_t hi,
                         int64_t *v, char *err, size_t errlen);

/* The stored type of an integer dataset: bytes (1..8) and sign. */
struct h5io_int {
    int8_t bytes, is_signed;
};
/* "int64", "uint8", "float32", "string", ... of a type; "[3]", "[2, 5]",
 * "scalar" of a dataspace (for messages). */
void h5io_type_name(hid_t t, char *buf, size_t len);
void h5io_shape_name(hid_t s, char *buf, size_t len);
/* An integer type of at most 8 bytes: its width and sign; -1 if not. */
int h5io_int_type(hid_t t, struct h5io_int *it);

/* What a dataset is, for readers that check it themselves. */
struct h5io_info {
    H5T_class_t cls;    /* H5T_NO_CLASS: unreadable */
    int is_int;         /* an integer of 1..8 bytes: it holds its width and sign */
    struct h5io_int it;
    int rank;           /* of a simple dataspace; -1: scalar, null or unreadable */
    int64_t dims[2];    /* the first two extents */
    char type[32], shape[96]; /* h5io_type_name, h5io_shape_name */
};
/* Open dataset name of loc (dapl: access list or H5P_DEFAULT) and describe
 * it into *info; the dataset, or -1 when it cannot be opened. */
hid_t h5io_dset_describe(hid_t loc, const char *name, hid_t dapl, struct h5io_info *info);
/* A dataset access list with a chunk cache of bytes (H5Pset_chunk_cache:
 * nslots 12421, w0 0.75); close with h5io_close_obj; -1 on failure. */
hid_t h5io_dapl_cache(size_t bytes);
/* The n strings of 1-D string dataset name of loc (variable length, its
 * global heap checked first, or fixed length, either padding), packed in
 * one allocation: n pointers, then the strings NUL-terminated (free() the
 * result once); NULL + err naming file and dataset. */
char **h5io_read_strings(hid_t loc, const char *file, const char *name, int64_t n, char *err,
                         size_t errlen);

/* Open dataset name of loc: class cls (H5T_INTEGER, H5T_FLOAT, H5T_STRING;
 * numbers of at most 8 bytes), rank `rank` (1 or 2) and extents dims[rank]
 * (-1: any; the extents found in got[rank]); its storage holds every value
 * (dataset_h5_storage_check). dapl: access list or H5P_DEFAULT. Returns
 * the dataset, or -1 + err. */
hid_t h5io_dset_open(hid_t loc, const char *file, const char *name, H5T_class_t cls, int rank,
                     const int64_t *dims, int64_t *got, hid_t dapl, char *err, size_t errlen);
/* Dataset d has the Fletcher-32 filter. */
int h5io_has_checksum(hid_t d);
/* Rows per chunk of dataset d (0: not chunked). */
int64_t h5io_dset_chunk_rows(hid_t d);
/* Read rows r0, r0 + stride, ... (n) of d [rows(, cols)] into buf as mtype
 * (collective under MPI-IO: n = 0 reads none). 0, or -1 (HDF5 failed:
 * damaged file, checksum mismatch). */
int h5io_read_rows(const struct h5io *h, hid_t d, hid_t mtype, int64_t r0, int64_t stride,
                   int64_t n, int64_t cols, void *buf);
/* Every member of group (links, in name order): fn(name, data); a nonzero
 * return stops the walk and is returned. -1 + err when the group cannot be
 * listed. */
int h5io_members(hid_t loc, const char *file, const char *group,
                 int (*fn)(const char *name, void *data), void *data, char *err, size_t errlen);

/* The same, with each link's kind: fn(name, hard (0: a soft or external
 * link), data). */
int h5io_links(hid_t loc, const char *file, const char *group,
               int (*fn)(const char *name, int hard, void *data), void *data, char *err,
               size_t errlen);
/* What path of loc is: 1 a group, 0 a dataset, 2 another object, -1
 * unreadable. */
int h5io_obj_kind(hid_t loc, const char *path);
/* Open object path of loc (a group or dataset: attributes are read from
 * it); close with h5io_close_obj; -1 when it cannot be opened. */
hid_t h5io_obj_open(hid_t loc, const char *path);

#endif
