/* dataset_h5: the checks of a file's own HDF5 structure before HDF5 reads
 * through it (dataset.h: dataset_h5_attrs_check, dataset_h5_vlen_check,
 * dataset_h5_storage_check). HDF5 1.10 trusts heap objects, chunk sizes and
 * attribute messages, and hangs or copies out of bounds on damaged ones
 * (the cases: tests/fuzz/hdf5-crashes/README); these parse them from the
 * file first. Used by the dataset and checkpoint readers. */
#include "data/dataset.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/check.h"
#include "base/log.h"

/* The file's address and length widths and its base address (user block). */
struct h5_layout {
    size_t addr, len;
    hsize_t base;
    uint64_t eof; /* bytes in the file */
};

static int h5_file_layout(hid_t obj, const char *file, struct h5_layout *l)
{
    hid_t f = H5Iget_file_id(obj), fcpl = f < 0 ? -1 : H5Fget_create_plist(f);
    struct stat st;
    int rc = fcpl >= 0 && H5Pget_sizes(fcpl, &l->addr, &l->len) >= 0 &&
                     H5Pget_userblock(fcpl, &l->base) >= 0 && stat(file, &st) == 0
                 ? 0
                 : -1;
    l->eof = rc ? 0 : (uint64_t)st.st_size;
    if (fcpl >= 0) H5Pclose(fcpl);
    if (f >= 0) H5Fclose(f);
    return rc;
}

static uint64_t le_decode(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* A global heap collection, parsed as H5HG's cache deserialiser parses it,
 * but stopping where it would loop forever (an object of size 0) or step
 * past the collection: the sizes of its objects by index. */
struct gheap {
    uint64_t addr; /* of the collection parsed, 0: none yet */
    uint64_t *size; /* [n]: object sizes, UINT64_MAX where absent */
    size_t n;
};

/* Parse the collection at addr into h; NULL, or what is wrong with it. */
static const char *gheap_parse(FILE *fp, const struct h5_layout *l, uint64_t addr,
                               struct gheap *h)
{
    const size_t hdr = 8 + l->len, objhdr = 8 + l->len; /* H5HG_SIZEOF_HDR, _OBJHDR */
    unsigned char head[24];
    h->addr = 0;
    h->n = 0;
    if (addr > l->eof || l->base + addr > l->eof - hdr)
        return "lies outside the file";
    if (fseeko(fp, (off_t)(l->base + addr), SEEK_SET) != 0 || fread(head, 1, hdr, fp) != hdr)
        return "cannot be read";
    if (memcmp(head, "GCOL", 4) || head[4] != 1)
        return "has no global heap signature";
    const uint64_t size = le_decode(head + 8, l->len);
    if (size < hdr || size > l->eof - (l->base + addr))
        return "has a size outside the file";
    unsigned char *c = xmalloc((size_t)size);
    const char *bad = NULL;
    if (fseeko(fp, (off_t)(l->base + addr), SEEK_SET) != 0 || fread(c, 1, size, fp) != size)
        bad = "cannot be read";
    for (uint64_t at = hdr; !bad && at < size;) {
        if (size - at < objhdr) /* free space too small for a header */
            break;
        const unsigned char *p = c + at;
        const size_t idx = (size_t)le_decode(p, 2);
        const uint64_t osize = le_decode(p + 8, l->len);
        uint64_t need = osize; /* object 0: free space, its size counts the header */
        if (idx > 0) {
            if (osize > size - at - objhdr) {
                bad = "has an object larger than the collection";
                break;
            }
            need = objhdr + ((osize + 7) & ~(uint64_t)7);
        }
        if (need == 0 || need > size - at) {
            bad = need ? "has an object past its end" : "has an object of size 0";
            break;
        }
        if (idx >= h->n) {
            size_t n = idx + 1 > 2 * h->n ? idx + 1 : 2 * h->n;
            h->size = xrealloc(h->size, n * sizeof *h->size);
            for (size_t k = h->n; k < n; k++)
                h->size[k] = UINT64_MAX;
            h->n = n;
        }
        if (idx > 0)
            h->size[idx] = osize;
        at += need;
    }
    free(c);
    if (!bad)
        h->addr = addr;
    return bad;
}

/* A soft conversion from a variable-length type to an opaque one of its
 * size on disk that leaves the bytes alone: H5Aread / H5Dread into that
 * opaque type return the stored (length, heap address, index) triples
 * without HDF5 following them into the global heap. */
#define RAW_VLEN_TAG "freescale: raw variable-length data"

static herr_t raw_vlen_conv(hid_t src, hid_t dst, H5T_cdata_t *cdata, size_t nelmts,
                            size_t buf_stride, size_t bkg_stride, void *buf, void *bkg,
                            hid_t dxpl)
{
    (void)nelmts, (void)buf_stride, (void)bkg_stride, (void)buf, (void)bkg, (void)dxpl;
    if (cdata->command == H5T_CONV_INIT) {
        char *tag = H5Tget_class(dst) == H5T_OPAQUE ? H5Tget_tag(dst) : NULL;
        int ok = tag && !strcmp(tag, RAW_VLEN_TAG) && H5Tget_size(src) == H5Tget_size(dst);
        if (tag)
            H5free_memory(tag);
        if (!ok)
            return -1; /* not ours: HDF5 tries its other conversions */
        cdata->need_bkg = H5T_BKG_NO;
    }
    return 0; /* H5T_CONV_CONV: the bytes are already where they belong */
}

static int raw_vlen_register(void)
{
    static int done = 0;
    if (done)
        return 0;
    hid_t vs = H5Tcopy(H5T_C_S1), op = H5Tcreate(H5T_OPAQUE, 16);
    int rc = vs < 0 || op < 0 || H5Tset_size(vs, H5T_VARIABLE) < 0 ||
                     H5Tset_tag(op, RAW_VLEN_TAG) < 0 ||
                     H5Tregister(H5T_PERS_SOFT, "freescale_raw_vlen", vs, op, raw_vlen_conv) < 0
                 ? -1
                 : 0;
    if (vs >= 0) H5Tclose(vs);
    if (op >= 0) H5Tclose(op);
    done = rc == 0;
    return rc;
}

/* The np stored values of obj (attribute or dataset; esize bytes each on
 * disk, heap objects of base bytes per element): each null or an object of
 * its length inside a well-formed collection. */
static int vlen_check_values(hid_t obj, int is_attr, const struct h5_layout *l, hssize_t np,
                             uint64_t base, const char *file, const char *what, char *err,
                             size_t errlen)
{
    const size_t esize = 4 + l->addr + 4; /* length, collection address, object index */
    unsigned char *raw = xmalloc((size_t)np * esize);
    hid_t op = H5Tcreate(H5T_OPAQUE, esize);
    int rc = 0;
    if (raw_vlen_register() || op < 0 || H5Tset_tag(op, RAW_VLEN_TAG) < 0 ||
        (is_attr ? H5Aread(obj, op, raw) : H5Dread(obj, op, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw)) < 0)
        rc = errorf(err, errlen, "%s: cannot read %s (truncated or corrupt file?)", file, what);
    if (op >= 0) H5Tclose(op);
    FILE *fp = rc ? NULL : fopen(file, "rb");
    if (!rc && !fp)
        rc = errorf(err, errlen, "%s: %s", file, strerror(errno));
    struct gheap h = {0, NULL, 0};
    for (hssize_t i = 0; rc == 0 && i < np; i++) {
        const unsigned char *e = raw + (size_t)i * esize;
        const uint64_t len = le_decode(e, 4), addr = le_decode(e + 4, l->addr);
        const uint64_t idx = le_decode(e + 4 + l->addr, 4);
        const char *bad = NULL;
        if (addr == 0) /* a null value: HDF5 reads nothing */
            continue;
        if (addr != h.addr)
            bad = gheap_parse(fp, l, addr, &h);
        if (!bad && (idx == 0 || idx >= h.n || h.size[idx] == UINT64_MAX))
            bad = "lacks the object referred to";
        else if (!bad && h.size[idx] != len * base)
            bad = "holds an object of another length";
        if (bad) {
            char at[48] = "";
            if (np > 1)
                snprintf(at, sizeof at, " (value %lld)", (long long)i);
            rc = errorf(err, errlen, "%s: %s%s: its global heap collection at %llu %s (corrupt "
                        "file?)", file, what, at, (unsigned long long)addr, bad);
        }
    }
    if (fp) fclose(fp);
    free(h.size);
    free(raw);
    return rc;
}

int dataset_h5_vlen_check(int64_t obj, const char *file, const char *what, char *err,
                          size_t errlen)
{
    const hid_t o = (hid_t)obj;
    const int is_attr = H5Iget_type(o) == H5I_ATTR;
    hid_t t = is_attr ? H5Aget_type(o) : H5Dget_type(o);
    hid_t s = is_attr ? H5Aget_space(o) : H5Dget_space(o);
    hid_t bt = t >= 0 && H5Tget_class(t) == H5T_VLEN ? H5Tget_super(t) : -1;
    hssize_t np = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
    struct h5_layout l;
    int rc = 0;
    if (t < 0 || s < 0 || np < 0)
        rc = errorf(err, errlen, "%s: cannot read the type of %s", file, what);
    else if (H5Tget_class(t) != H5T_VLEN && H5Tis_variable_str(t) <= 0)
        rc = 0; /* not variable-length: nothing in a global heap */
    else if (h5_file_layout(o, file, &l) || l.addr < 2 || l.addr > 8 || l.len < 2 || l.len > 8 ||
             (H5Tget_class(t) == H5T_VLEN && (bt < 0 || H5Tget_size(bt) == 0)))
        rc = errorf(err, errlen, "%s: cannot check the storage of %s (unusual HDF5 layout)",
                    file, what);
    else if (is_attr && H5Aget_storage_size(o) != (hsize_t)np * (4 + l.addr + 4))
        rc = errorf(err, errlen, "%s: %s stores %llu bytes for %lld variable-length values",
                    file, what, (unsigned long long)H5Aget_storage_size(o), (long long)np);
    else if (np > 0)
        rc = vlen_check_values(o, is_attr, &l, np, bt >= 0 ? H5Tget_size(bt) : 1, file, what,
                               err, errlen);
    if (bt >= 0) H5Tclose(bt);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    return rc;
}

/* Every allocated chunk of chunked dataset d (dataspace s, values of tsize
 * bytes on disk): see dataset_h5_storage_check. */
static int chunks_check(hid_t d, hid_t dcpl, hid_t s, uint64_t tsize, const char *file,
                        const char *what, char *err, size_t errlen)
{
    hsize_t dims[H5S_MAX_RANK], cdims[H5S_MAX_RANK], at[H5S_MAX_RANK] = {0};
    const int rank = H5Sget_simple_extent_ndims(s), nf = H5Pget_nfilters(dcpl);
    if (rank < 1 || rank > H5S_MAX_RANK || nf < 0 || nf > 32 ||
        H5Sget_simple_extent_dims(s, dims, NULL) < 0 || H5Pget_chunk(dcpl, rank, cdims) != rank)
        return errorf(err, errlen, "%s: %s has an unreadable chunk layout", file, what);
    uint64_t cbytes = tsize;
    for (int k = 0; k < rank; k++) {
        if (cdims[k] == 0 || cbytes > ((uint64_t)1 << 32) / cdims[k])
            return errorf(err, errlen, "%s: %s has chunks of an impossible shape", file, what);
        cbytes *= cdims[k];
        if (dims[k] == 0)
            return 0; /* no values, no chunks read */
    }
    H5Z_filter_t id[32];
    for (int i = 0; i < nf; i++) {
        unsigned flags, fc;
        size_t ncd = 0;
        if ((id[i] = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, NULL, 0, NULL, &fc)) < 0)
            return errorf(err, errlen, "%s: %s has an unreadable filter pipeline", file, what);
    }
    for (;;) {
        hsize_t off[H5S_MAX_RANK], size = 0;
        haddr_t addr = HADDR_UNDEF;
        unsigned mask = 0;
        for (int k = 0; k < rank; k++)
            off[k] = at[k] * cdims[k];
        if (H5Dget_chunk_info_by_coord(d, off, &mask, &addr, &size) < 0)
            return errorf(err, errlen, "%s: %s has an unreadable chunk index", file, what);
        if (addr != HADDR_UNDEF) { /* unallocated: HDF5 reads the fill value */
            int keeps = 1, sum = 0; /* the filters applied keep the size; Fletcher-32 among them */
            for (int i = 0; i < nf; i++)
                if (!(mask & (1u << i))) {
                    sum |= id[i] == H5Z_FILTER_FLETCHER32;
                    keeps &= id[i] == H5Z_FILTER_SHUFFLE || id[i] == H5Z_FILTER_FLETCHER32;
                }
            const uint64_t want = cbytes + (sum ? 4 : 0);
            if (size == 0 || (keeps && size != want) || (sum && size < 4)) {
                char where[96];
                size_t used = 0;
                for (int k = 0; k < rank && used < sizeof where; k++)
                    used += (size_t)snprintf(where + used, sizeof where - used, "%s%llu",
                                             k ? ", " : "", (unsigned long long)off[k]);
                if (!keeps)
                    return errorf(err, errlen, "%s: %s: the chunk at [%s] stores %llu bytes "
                                  "(corrupt file?)", file, what, where, (unsigned long long)size);
                return errorf(err, errlen, "%s: %s: the chunk at [%s] stores %llu bytes, expected "
                              "%llu (corrupt file?)", file, what, where, (unsigned long long)size,
                              (unsigned long long)want);
            }
        }
        int k = rank - 1; /* next chunk, last dimension fastest */
        while (k >= 0 && (at[k] + 1) * cdims[k] >= dims[k])
            at[k--] = 0;
        if (k < 0)
            return 0;
        at[k]++;
    }
}

int dataset_h5_storage_check(int64_t dset, const char *file, const char *what, char *err,
                             size_t errlen)
{
    const hid_t d = (hid_t)dset;
    hid_t t = H5Dget_type(d), s = H5Dget_space(d), dcpl = H5Dget_create_plist(d);
    H5D_layout_t lay = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    hssize_t np = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
    uint64_t tsize = t >= 0 ? H5Tget_size(t) : 0, need = 0;
    struct h5_layout l;
    int rc = 0;
    if (t >= 0 && (H5Tget_class(t) == H5T_VLEN || H5Tis_variable_str(t) > 0)) /* on disk */
        tsize = h5_file_layout(d, file, &l) ? 0 : 4 + l.addr + 4;
    if (t < 0 || s < 0 || lay == H5D_LAYOUT_ERROR || np < 0 || tsize == 0)
        rc = errorf(err, errlen, "%s: %s has an unreadable layout", file, what);
    else if (lay == H5D_CHUNKED)
        rc = chunks_check(d, dcpl, s, tsize, file, what, err, errlen);
    else if (lay != H5D_CONTIGUOUS && lay != H5D_COMPACT)
        rc = errorf(err, errlen, "%s: %s is a virtual dataset (not supported)", file, what);
    else if (__builtin_mul_overflow((uint64_t)np, tsize, &need) ||
             H5Dget_storage_size(d) < need) /* HDF5 would copy past it */
        rc = errorf(err, errlen, "%s: %s stores %llu bytes for %lld values of %llu bytes "
                    "(corrupt file?)", file, what, (unsigned long long)H5Dget_storage_size(d),
                    (long long)np, (unsigned long long)tsize);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    return rc;
}

/* One attribute message (body b[n], the file's layout l): its name, type
 * and space fit in it and its value fits in what follows them (HDF5 1.10
 * checks the value against the whole message, and strdup's the name). */
static const char *attr_msg_check(const unsigned char *b, uint64_t n, const struct h5_layout *l)
{
    if (n < 8 || b[0] < 1 || b[0] > 3)
        return "is too short or of an unknown version";
    if (b[0] > 1 && (b[1] & 3))
        return "has a shared type or space (not supported)";
    const uint64_t name = le_decode(b + 2, 2), dt = le_decode(b + 4, 2), sp = le_decode(b + 6, 2);
    const uint64_t pad = b[0] == 1 ? 7 : 0; /* version 1 aligns each part on 8 bytes */
    const uint64_t at_name = b[0] == 3 ? 9 : 8, at_dt = at_name + ((name + pad) & ~pad);
    const uint64_t at_sp = at_dt + ((dt + pad) & ~pad), at_data = at_sp + ((sp + pad) & ~pad);
    if (name == 0 || dt < 8 || sp < 4 || at_data > n || memchr(b + at_name, 0, name) == NULL)
        return "has a name, type or space that does not fit";
    const unsigned char *t = b + at_dt, *d = b + at_sp;
    uint64_t tsize = (t[0] & 0x0f) == 9 ? 4 + l->addr + 4 : le_decode(t + 4, 4); /* vlen: on disk */
    const unsigned rank = d[1], v = d[0];
    const uint64_t at_dims = v == 1 ? 8 : 4;
    if ((v != 1 && v != 2) || rank > 32 || at_dims + (uint64_t)rank * l->len > sp)
        return "has an unreadable dataspace";
    uint64_t points = v == 2 && d[3] == 2 ? 0 : 1; /* null, else scalar or the product */
    for (unsigned k = 0; k < rank && points; k++) {
        const uint64_t dim = le_decode(d + at_dims + (uint64_t)k * l->len, l->len);
        if (dim && points > UINT64_MAX / dim)
            return "has an impossible dataspace";
        points *= dim;
    }
    if (points && tsize > (n - at_data) / points)
        return "has a value longer than the message";
    return NULL;
}

int dataset_h5_attrs_check(int64_t obj, const char *file, const char *what, char *err,
                           size_t errlen)
{
    H5O_info_t oi;
    struct h5_layout l;
    if (H5Oget_info2((hid_t)obj, &oi, H5O_INFO_BASIC) < 0 || h5_file_layout((hid_t)obj, file, &l) ||
        l.addr < 2 || l.addr > 8 || l.len < 2 || l.len > 8)
        return errorf(err, errlen, "%s: %s: cannot read its object header", file, what);
    FILE *fp = fopen(file, "rb");
    if (!fp)
        return errorf(err, errlen, "%s: %s", file, strerror(errno));
    unsigned char pre[16];
    const char *bad = NULL;
    int nchunks = 0, in_attr = 0;
    uint64_t chunk[64][2]; /* (address, size) of the header's chunks */
    if (oi.addr > l.eof || l.base + oi.addr > l.eof - 16 ||
        fseeko(fp, (off_t)(l.base + oi.addr), SEEK_SET) || fread(pre, 1, 16, fp) != 16)
        bad = "lies outside the file";
    else if (!memcmp(pre, "OHDR", 4)) {
        fclose(fp); /* version 2: checksummed, HDF5 verifies it */
        return 0;
    } else if (pre[0] != 1)
        bad = "is of an unknown version";
    else {
        chunk[0][0] = oi.addr + 16;
        chunk[0][1] = le_decode(pre + 8, 4);
        nchunks = 1;
    }
    for (int c = 0; !bad && c < nchunks; c++) {
        const uint64_t at = chunk[c][0], n = chunk[c][1];
        if (at > l.eof || n > l.eof - at || l.base + at + n > l.eof) {
            bad = "has a chunk outside the file";
            break;
        }
        unsigned char *b = xmalloc(n ? n : 1);
        if (fseeko(fp, (off_t)(l.base + at), SEEK_SET) || fread(b, 1, n, fp) != n)
            bad = "cannot be read";
        for (uint64_t p = 0; !bad && n - p >= 8; ) {
            const uint64_t type = le_decode(b + p, 2), size = le_decode(b + p + 2, 2);
            if (size > n - p - 8) {
                bad = "has a message past its chunk";
                break;
            }
            const unsigned char *body = b + p + 8;
            if (type == 0x10 && size >= l.addr + l.len) { /* continuation */
                if (nchunks == 64)
                    bad = "has too many chunks";
                else {
                    chunk[nchunks][0] = le_decode(body, l.addr);
                    chunk[nchunks++][1] = le_decode(body + l.addr, l.len);
                }
            } else if (type == 0x0c)
                in_attr = (bad = attr_msg_check(body, size, &l)) != NULL;
            p += 8 + size;
        }
        free(b);
    }
    fclose(fp);
    if (bad)
        return errorf(err, errlen, "%s: %s: %s %s (corrupt file?)", file, what,
                      in_attr ? "an attribute message of its object header" : "its object header",
                      bad);
    return 0;
}

