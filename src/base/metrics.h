/* metrics: the JSON-lines metrics file (output.metrics), written by rank 0.
 * Every line is one object with at least "event" ("train", "eval" or
 * "summary"), "epoch", "step", "loss", "samples_per_s" and "tokens_per_s";
 * evaluation lines add "split", "hr@K", "ndcg@K" and "mrr"; the first line
 * is the run's parameters ("params": base/params.h, params_json). These
 * names are a contract that scripts read. */
#ifndef FS_METRICS_H
#define FS_METRICS_H

#include <stdint.h>
#include <stdio.h>

struct metrics_line {
    char buf[8192];
    size_t len;
};

/* Open path into *f (truncated, or appended to when append: a resumed
 * run); NULL path or "" = no file (*f NULL). 0, or -1 with err. */
int metrics_open(const char *path, int append, FILE **f, char *err, size_t len);
void metrics_begin(struct metrics_line *l, const char *event);
void metrics_int(struct metrics_line *l, const char *key, int64_t v);
void metrics_num(struct metrics_line *l, const char *key, double v);
/* The same with every digit of the double (%.17g): values tests recompute. */
void metrics_num_exact(struct metrics_line *l, const char *key, double v);
void metrics_str(struct metrics_line *l, const char *key, const char *v);
/* Close the object and write it as one line (flushed). */
void metrics_end(struct metrics_line *l, FILE *f);

#endif
