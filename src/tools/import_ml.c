/* import_ml: the MovieLens side files of 'freescale data import' (--items,
 * --users; see import_side.h), the layout told by the first line:
 *
 *   movies.dat  "movieId::title::genres"                (ML-1M, ML-10M)
 *   movies.csv  header "movieId,title,genres", RFC 4180  (ML-20M, 25M, latest)
 *   u.item      "id|title|release|video release|url|19 genre flags" (ML-100K)
 *   users.dat   "userId::gender::age::occupation::zip"  (ML-1M)
 *   u.user      "id|age|gender|occupation|zip"          (ML-100K)
 *
 * Item features: genres (multi-valued; "(no genres listed)" is none), year
 * (the four digits after the title's last '(', else missing). User
 * features: gender, age (ML-100K ages put in ML-1M's groups 1, 18, 25, 35,
 * 45, 50, 56), occupation, zip_prefix (the zip code's first two
 * characters). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"
#include "tools/import_priv.h"
#include "tools/import_side.h"
#include "tools/import_table.h"

/* ML-100K's genres, in the order of u.item's flags (u.genre). */
static const char *const u_genres[19] = {
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
    "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
    "Romance", "Sci-Fi", "Thriller", "War", "Western"};

enum ml_side { ML_DAT, ML_CSV, ML_PIPE };

struct ml_state {
    struct import_join *j;
    const char *path;
    enum ml_side layout;
    int header_pending;
    struct import_feature *f[4];
};

/* The layout of path from its first line (the file is opened twice: not
 * standard input). */
static enum ml_side ml_layout(const char *path, const char *opt, const char *csv_header)
{
    if (!strcmp(path, "-"))
        fatal("%s: a file is needed, not standard input", opt);
    struct import_input in;
    import_input_open(&in, path);
    char *s;
    size_t len = 0;
    int got = import_input_line(&in, &s, &len);
    enum ml_side l = !got ? ML_DAT : memmem(s, len, "::", 2) ? ML_DAT
                     : memchr(s, '|', len) && !(csv_header && len >= strlen(csv_header) &&
                                                !memcmp(s, csv_header, strlen(csv_header)))
                         ? ML_PIPE : ML_CSV;
    if (got && l == ML_CSV && !csv_header) /* users: no csv layout */
        fatal("%s:1: %s: not a MovieLens users file: expected '::' fields (users.dat: "
              "UserID::Gender::Age::Occupation::Zip-code) or '|' fields (ML-100K's u.user); "
              "for a csv of user features use --user-features %s --user-key COL", path, opt,
              path);
    if (got && l == ML_CSV && !(len >= strlen(csv_header) &&
                                !memcmp(s, csv_header, strlen(csv_header))))
        fatal("%s:1: %s: not a MovieLens file: expected '::' fields (.dat), '|' fields "
              "(ML-100K) or the header '%s...'; for another csv of item features use "
              "--item-features %s --item-key COL", path, opt, csv_header, path);
    import_input_close(&in);
    if (!got)
        fatal("%s: empty file", path);
    return l;
}

static void ml_bad(void *ctx, int64_t line, const char *what)
{
    const struct ml_state *st = ctx;
    fatal("%s:%lld: %s", st->path, (long long)line, what);
}

static void ml_fields(const struct ml_state *st, const struct import_record *r, int want,
                      const char *what)
{
    if (r->nf != want)
        fatal("%s:%lld: %d field%s, expected %d (%s)", st->path, (long long)r->line, r->nf,
              r->nf == 1 ? "" : "s", want, what);
}

/* --- items ------------------------------------------------------------------ */

/* The year of a title "Name (1995)": the four digits after its last '(' . */
static void title_year(struct import_feature *f, int64_t e, const char *t, size_t len)
{
    for (size_t i = len; i-- > 0;)
        if (t[i] == '(') {
            if (i + 4 < len + 0 && t[i + 1] >= '0' && t[i + 1] <= '9' && t[i + 2] >= '0' &&
                t[i + 2] <= '9' && t[i + 3] >= '0' && t[i + 3] <= '9' && t[i + 4] >= '0' &&
                t[i + 4] <= '9')
                import_feature_text(f, e, t + i + 1, 4);
            return;
        }
}

static void item_record(void *ctx, const struct import_record *r)
{
    struct ml_state *st = ctx;
    if (st->header_pending) {
        st->header_pending = 0;
        return;
    }
    const int pipe = st->layout == ML_PIPE;
    ml_fields(st, r, pipe ? 24 : 3, pipe ? "u.item: id|title|release date|video release date|"
                                           "URL|19 genre flags"
                                         : "movieId, title, genres");
    size_t len;
    const char *key = import_record_field(r, 0, &len);
    const int64_t e = import_join_key(st->j, st->path, r->line, "movieId", key, len);
    if (e < 0)
        return;
    const char *title = import_record_field(r, 1, &len);
    title_year(st->f[1], e, title, len);
    if (pipe) {
        for (int g = 0; g < 19; g++) {
            const char *flag = import_record_field(r, 5 + g, &len);
            if (len == 1 && flag[0] == '1')
                import_feature_text(st->f[0], e, u_genres[g], strlen(u_genres[g]));
            else if (!(len == 1 && flag[0] == '0'))
                fatal("%s:%lld: genre flag %d is '%.*s', expected 0 or 1", st->path,
                      (long long)r->line, g + 1, (int)(len > 20 ? 20 : len), flag);
        }
        return;
    }
    const char *g = import_record_field(r, 2, &len);
    if (len == 18 && !memcmp(g, "(no genres listed)", 18))
        return;
    for (const char *p = g, *end = g + len; p <= end;) {
        const char *q = memchr(p, '|', (size_t)(end - p));
        if (!q)
            q = end;
        import_feature_text(st->f[0], e, p, (size_t)(q - p));
        p = q + 1;
    }
}

void import_ml_items(const char *path, struct import_join *j, struct import_features *out)
{
    struct ml_state st = {.j = j, .path = path};
    st.layout = ml_layout(path, "--items", "movieId,title,genres");
    st.header_pending = st.layout == ML_CSV;
    st.f[0] = import_features_add(out, DS_ITEMS, "genres", 0, path);
    st.f[1] = import_features_add(out, DS_ITEMS, "year", 0, path);
    import_feature_begin(st.f[0], j->n, 1);
    import_feature_begin(st.f[1], j->n, 0);
    struct import_input in;
    import_input_open(&in, path);
    const struct import_table_ops ops = {.record = item_record, .bad = ml_bad, .ctx = &st};
    import_table_read(&in, st.layout == ML_DAT ? "::" : st.layout == ML_PIPE ? "|" : ",",
                      st.layout == ML_CSV, &ops);
    import_input_close(&in);
    import_feature_finish(st.f[0]);
    import_feature_finish(st.f[1]);
    import_join_report(j, path);
}

/* --- users ------------------------------------------------------------------ */

/* ML-100K's age in years as ML-1M's age group (1: under 18, 18: 18-24, ...). */
static const char *age_group(int64_t age)
{
    return age < 18 ? "1" : age < 25 ? "18" : age < 35 ? "25" : age < 45 ? "35"
           : age < 50 ? "45" : age < 56 ? "50" : "56";
}

static void user_record(void *ctx, const struct import_record *r)
{
    struct ml_state *st = ctx;
    const int pipe = st->layout == ML_PIPE;
    ml_fields(st, r, 5, pipe ? "u.user: id|age|gender|occupation|zip code"
                             : "users.dat: UserID::Gender::Age::Occupation::Zip-code");
    size_t len;
    const char *key = import_record_field(r, 0, &len);
    const int64_t e = import_join_key(st->j, st->path, r->line, "userId", key, len);
    if (e < 0)
        return;
    const char *gender = import_record_field(r, pipe ? 2 : 1, &len);
    import_feature_text(st->f[0], e, gender, len);
    const char *age = import_record_field(r, pipe ? 1 : 2, &len);
    if (pipe) {
        int64_t years;
        char b[48];
        if (import_parse_i64(age, len, &years))
            fatal("%s:%lld: age '%s' is not an integer", st->path, (long long)r->line,
                  import_shown(b, sizeof b, age, len));
        age = age_group(years);
        len = strlen(age);
    }
    import_feature_text(st->f[1], e, age, len);
    const char *occ = import_record_field(r, 3, &len);
    import_feature_text(st->f[2], e, occ, len);
    const char *zip = import_record_field(r, 4, &len);
    while (len && (*zip == ' ' || *zip == '\t'))
        zip++, len--;
    import_feature_text(st->f[3], e, zip, len < 2 ? len : 2);
}

void import_ml_users(const char *path, struct import_join *j, struct import_features *out)
{
    struct ml_state st = {.j = j, .path = path};
    st.layout = ml_layout(path, "--users", NULL); /* no csv layout for users */
    static const char *const names[4] = {"gender", "age", "occupation", "zip_prefix"};
    for (int k = 0; k < 4; k++) {
        st.f[k] = import_features_add(out, DS_USERS, names[k], 0, path);
        import_feature_begin(st.f[k], j->n, 0);
    }
    struct import_input in;
    import_input_open(&in, path);
    const struct import_table_ops ops = {.record = user_record, .bad = ml_bad, .ctx = &st};
    import_table_read(&in, st.layout == ML_DAT ? "::" : "|", 0, &ops);
    import_input_close(&in);
    for (int k = 0; k < 4; k++)
        import_feature_finish(st.f[k]);
    import_join_report(j, path);
}
