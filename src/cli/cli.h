/* cli: strict parsing of command-line option values for the data tools.
 * Each function ends the program with fatal() naming the option when the
 * text is not a valid value. */
#ifndef FS_CLI_H
#define FS_CLI_H

#include <stdint.h>

/* Integer count; accepts 12345, 1e6, 2.5e7 (must be integral), in [lo, hi]. */
int64_t cli_count(const char *opt, const char *text, int64_t lo, int64_t hi);
/* Finite number in [lo, hi]. */
double cli_number(const char *opt, const char *text, double lo, double hi);
/* Split "a,b,c" into up to max numbers; returns how many were given. */
int cli_numbers(const char *opt, const char *text, double *out, int max);
/* If argv[*i] is one of names[n], as "--name VALUE" or "--name=VALUE",
 * return its index and set *value (advancing *i past a separate value);
 * -1 if none matches. A missing value ends the program naming tool and
 * option. */
int cli_option(const char *tool, int argc, char **argv, int *i, const char *const *names, int n,
               const char **value);
/* A word that is not an option: the first one without '=' is the parameter
 * file (*file), the others must be section.key=value overrides (appended to
 * overrides[*n]); anything else ends the program naming tool. */
void cli_file_or_override(const char *tool, char *word, const char **file, char **overrides,
                          int *n);
/* A "Key: N kB" field of /proc/self/status (VmRSS, VmHWM, VmSize), -1 if absent. */
int64_t cli_proc_status_kib(const char *key);
/* Reset this process's peak resident size (VmHWM) to its current size, so
 * that VmHWM then measures the peak of what follows; 0, or -1 when the
 * kernel does not offer it. */
int cli_peak_reset(void);
/* Median of v[n] (sorts v in place). */
double cli_median(double *v, int n);

#endif
