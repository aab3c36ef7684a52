/* cli: command-line value parsing; see cli.h. */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

int64_t cli_count(const char *opt, const char *text, int64_t lo, int64_t hi)
{
    char *end;
    errno = 0;
    double f = strtod(text, &end);
    if (end == text || *end || errno == ERANGE || !isfinite(f) || f != floor(f))
        fatal("%s: '%s' is not a whole number", opt, text);
    if (f < (double)lo || f > (double)hi)
        fatal("%s: %s is out of range [%lld, %lld]", opt, text, (long long)lo, (long long)hi);
    if (fabs(f) < 9007199254740992.0 && strpbrk(text, "eE.") == NULL) /* exact for big ints */
        return strtoll(text, NULL, 10);
    return (int64_t)f;
}

double cli_number(const char *opt, const char *text, double lo, double hi)
{
    char *end;
    errno = 0;
    double f = strtod(text, &end);
    if (end == text || *end || !isfinite(f))
        fatal("%s: '%s' is not a number", opt, text);
    if (f < lo || f > hi)
        fatal("%s: %s is out of range [%g, %g]", opt, text, lo, hi);
    return f;
}

int cli_numbers(const char *opt, const char *text, double *out, int max)
{
    int n = 0;
    const char *p = text;
    for (;;) {
        char *end;
        errno = 0;
        double f = strtod(p, &end);
        if (end == p || !isfinite(f) || (*end && *end != ','))
            fatal("%s: '%s' is not a comma-separated list of numbers", opt, text);
        if (n == max)
            fatal("%s: '%s' has more than %d numbers", opt, text, max);
        out[n++] = f;
        if (!*end)
            return n;
        p = end + 1;
    }
}

int64_t cli_proc_status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    size_t n = strlen(key);
    int64_t v = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') {
            v = strtoll(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

int cli_peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w"); /* 5: VmHWM := VmRSS (Linux >= 4.0) */
    if (!f)
        return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

double cli_median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n is small */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cli_option(const char *tool, int argc, char **argv, int *i, const char *const *names, int n,
               const char **value)
{
    const char *a = argv[*i];
    for (int k = 0; k < n; k++) {
        size_t nl = strlen(names[k]);
        if (strncmp(a, names[k], nl) || (a[nl] != '=' && a[nl] != '\0'))
            continue;
        if (a[nl] == '=')
            *value = a + nl + 1;
        else if (*i + 1 < argc)
            *value = argv[++*i];
        else
            fatal("%s: %s needs a value", tool, names[k]);
        return k;
    }
    return -1;
}

void cli_file_or_override(const char *tool, char *word, const char **file, char **overrides,
                          int *n)
{
    if (!*file && !strchr(word, '='))
        *file = word;
    else if (strchr(word, '='))
        overrides[(*n)++] = word;
    else
        fatal("%s: unexpected argument '%s' (overrides are section.key=value)", tool, word);
}
