/* oracle_records: the record files the loss tests write for their PyTorch
 * oracles (read by tests/oracle_records.py): per record a uint8 name length,
 * the name PREFIX.NAME, one type byte (f float32, d float64, q int64), an
 * int64 count and the values, native little-endian. A failed write ends the
 * test through fatal(). */
#ifndef FS_TEST_ORACLE_RECORDS_H
#define FS_TEST_ORACLE_RECORDS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

static inline void oracle_put(FILE *f, const char *prefix, const char *name, char type, int64_t n,
                              const void *data)
{
    char full[64];
    int w = snprintf(full, sizeof full, "%s.%s", prefix, name);
    if (w < 0 || (size_t)w >= sizeof full)
        fatal("oracle record %s.%s: name longer than %zu bytes", prefix, name, sizeof full - 1);
    uint8_t len = (uint8_t)strlen(full);
    size_t size = type == 'f' ? 4 : 8;
    if (fwrite(&len, 1, 1, f) != 1 || fwrite(full, 1, len, f) != len ||
        fwrite(&type, 1, 1, f) != 1 || fwrite(&n, 8, 1, f) != 1 ||
        fwrite(data, size, (size_t)n, f) != (size_t)n)
        fatal("oracle record %s: write failed", full);
}

#endif
