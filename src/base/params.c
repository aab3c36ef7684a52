/* params: parsing, validation, broadcast and printing of parameters; see
 * params.h. The INI syntax is parsed by inih; this file only checks what
 * inih hands over against the table of params_table.h. */
#include "base/params.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/check.h"

#define X(sec, key, type, def, lo, hi, choices, help) \
    {#sec, #key, PT_##type, def, lo, hi, choices, help},
const struct param_def param_defs[P_COUNT] = {
#include "base/params_table.h"
};
#undef X

static const char *type_name(enum param_type t)
{
    switch (t) {
    case PT_INT: return "integer";
    case PT_FLOAT: return "number";
    case PT_BOOL: return "on|off";
    case PT_CHOICE: return "word";
    case PT_STRING: return "string";
    }
    return "?";
}

/* Levenshtein distance, for "did you mean" suggestions. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best)
                best = row[j] + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static int find_param(const char *section, const char *key)
{
    for (int i = 0; i < P_COUNT; i++)
        if (!strcmp(param_defs[i].section, section) && !strcmp(param_defs[i].key, key))
            return i;
    return -1;
}

static int section_exists(const char *section)
{
    for (int i = 0; i < P_COUNT; i++)
        if (!strcmp(param_defs[i].section, section))
            return 1;
    return 0;
}

/* Explain an unknown section or key, with the closest valid names. */
static int unknown_name(const char *where, const char *section, const char *key, char *err,
                        size_t errlen)
{
    char hint[256] = "";
    if (!section_exists(section)) {
        const char *best = NULL;
        size_t bestd = 3;
        for (int i = 0; i < P_COUNT; i++) {
            size_t d = edit_distance(section, param_defs[i].section);
            if (d < bestd) {
                bestd = d;
                best = param_defs[i].section;
            }
        }
        /* the key may exist in another section: suggest that too */
        for (int i = 0; !best && i < P_COUNT; i++)
            if (!strcmp(param_defs[i].key, key))
                best = param_defs[i].section;
        if (best)
            snprintf(hint, sizeof hint, "; did you mean [%s]?", best);
        return errorf(err, errlen, "%s: unknown section [%s] (key '%s')%s", where, section, key,
                      hint);
    }
    size_t n = 0;
    for (int pass = 0; pass < 2 && n == 0; pass++)
        for (int i = 0; i < P_COUNT; i++) {
            const struct param_def *d = &param_defs[i];
            int close = pass == 0 ? !strcmp(d->section, section) &&
                                        edit_distance(key, d->key) <= (strlen(key) > 4 ? 2u : 1u)
                                  : !strcmp(d->key, key);
            if (!close)
                continue;
            size_t len = strlen(hint);
            snprintf(hint + len, sizeof hint - len, "%s%s.%s", n ? "' or '" : "; did you mean '",
                     d->section, d->key);
            n++;
        }
    if (n)
        strncat(hint, "'?", sizeof hint - strlen(hint) - 1);
    else {
        snprintf(hint, sizeof hint, "; valid keys in [%s]:", section);
        for (int i = 0; i < P_COUNT; i++)
            if (!strcmp(param_defs[i].section, section)) {
                size_t len = strlen(hint);
                snprintf(hint + len, sizeof hint - len, " %s", param_defs[i].key);
            }
    }
    return errorf(err, errlen, "%s: unknown key '%s' in section [%s]%s", where, key, section,
                  hint);
}

/* Parse text for definition d into v (and canonical text into canon). */
static int parse_value(const struct param_def *d, const char *text, union param_value *v,
                       char *canon, const char *where, char *err, size_t errlen)
{
    const char *name_fmt = "%s: %s.%s = '%s': ";
    char name[300];
    snprintf(name, sizeof name, name_fmt, where, d->section, d->key, text);
    if (d->type != PT_STRING && text[0] == '\0')
        return errorf(err, errlen, "%sempty value (expected %s)", name, type_name(d->type));
    if (strlen(text) >= PARAM_STR_MAX)
        return errorf(err, errlen, "%s: %s.%s: value longer than %d characters", where,
                      d->section, d->key, PARAM_STR_MAX - 1);
    switch (d->type) {
    case PT_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(text, &end, 10);
        if (*end == 'e' || *end == 'E' || *end == '.') { /* 1e6, 5.0 */
            double f = strtod(text, &end);
            if (*end || !isfinite(f) || f != floor(f) || fabs(f) > 9.2e18)
                return errorf(err, errlen, "%snot an integer", name);
            x = (long long)f;
        } else if (*end || end == text || errno == ERANGE)
            return errorf(err, errlen, "%snot an integer", name);
        if ((double)x < d->min || (double)x > d->max)
            return errorf(err, errlen, "%sout of range [%.17g, %.17g]", name, d->min, d->max);
        v->i = x;
        snprintf(canon, PARAM_STR_MAX, "%lld", x);
        return 0;
    }
    case PT_FLOAT: {
        char *end;
        errno = 0;
        double x = strtod(text, &end);
        if (*end || end == text || !isfinite(x))
            return errorf(err, errlen, "%snot a finite number", name);
        if (x < d->min || x > d->max)
            return errorf(err, errlen, "%sout of range [%g, %g]", name, d->min, d->max);
        v->f = x;
        snprintf(canon, PARAM_STR_MAX, "%.17g", x);
        /* keep the user's spelling when it round-trips exactly */
        if (strtod(text, NULL) == x && strlen(text) < 32)
            snprintf(canon, PARAM_STR_MAX, "%s", text);
        return 0;
    }
    case PT_BOOL: {
        static const char *yes[] = {"on", "true", "yes", "1"}, *no[] = {"off", "false", "no", "0"};
        for (int i = 0; i < 4; i++) {
            if (!strcasecmp(text, yes[i]) || !strcasecmp(text, no[i])) {
                v->i = !strcasecmp(text, yes[i]);
                snprintf(canon, PARAM_STR_MAX, "%s", v->i ? "on" : "off");
                return 0;
            }
        }
        return errorf(err, errlen, "%sexpected on or off", name);
    }
    case PT_CHOICE: {
        const char *c = d->choices;
        for (int64_t idx = 0; *c; idx++) {
            size_t n = strcspn(c, "|");
            if (strlen(text) == n && !strncmp(text, c, n)) {
                v->i = idx;
                snprintf(canon, PARAM_STR_MAX, "%s", text);
                return 0;
            }
            c += n + (c[n] == '|');
        }
        return errorf(err, errlen, "%sexpected one of %s", name, d->choices);
    }
    case PT_STRING:
        snprintf(canon, PARAM_STR_MAX, "%s", text);
        return 0;
    }
    return errorf(err, errlen, "%sinternal: bad type", name);
}

void params_defaults(struct params *p)
{
    char err[PARAM_ERR_MAX];
    memset(p, 0, sizeof *p);
    for (int i = 0; i < P_COUNT; i++)
        if (parse_value(&param_defs[i], param_defs[i].def, &p->v[i], p->str[i], "default", err,
                        sizeof err))
            fatal("params_table.h: bad default: %s", err);
}

int params_set(struct params *p, const char *section, const char *key, const char *value,
               const char *where, char *err, size_t errlen)
{
    int id = find_param(section, key);
    if (id < 0)
        return unknown_name(where, section, key, err, errlen);
    union param_value v;
    char canon[PARAM_STR_MAX];
    if (parse_value(&param_defs[id], value, &v, canon, where, err, errlen))
        return -1;
    p->v[id] = v;
    memcpy(p->str[id], canon, sizeof canon);
    snprintf(p->origin[id], PARAM_STR_MAX, "%s", where);
    return 0;
}

/* --- INI files through inih ------------------------------------------- */

struct ini_state {
    struct params *p;
    const char *path;
    FILE *f;
    int line;            /* line most recently handed to inih */
    int long_line;       /* first line longer than inih accepts, 0 if none */
    int nul_line;        /* first line holding a NUL byte, 0 if none */
    int err_line;        /* line of the first error reported by the handler */
    int indented;        /* the line most recently read starts with a blank */
    int last_id;         /* the parameter the previous key line set (-1: none) */
    int set_line[P_COUNT];
    char *err;
    size_t errlen;
};

/* inih's line reader: counts lines so that the handler knows where it is. */
static char *fs_ini_reader(char *str, int num, void *stream)
{
    struct ini_state *s = stream;
    int n = 0, ch = EOF;
    while (n < num - 1 && (ch = fgetc(s->f)) != EOF) {
        if (ch == '\0' && !s->nul_line) /* inih would cut the line there silently */
            s->nul_line = s->line + 1;
        str[n++] = (char)ch;
        if (ch == '\n')
            break;
    }
    if (n == 0)
        return NULL;
    str[n] = '\0';
    s->line++;
    s->indented = str[0] == ' ' || str[0] == '\t';
    if (n == num - 1 && str[n - 1] != '\n' && (ch = fgetc(s->f)) != EOF) {
        if (!s->long_line)
            s->long_line = s->line;
        while (ch != EOF && ch != '\n') /* drop the rest of the line */
            ch = fgetc(s->f);
    }
    return str;
}

/* Strip an inline "# comment" (a '#' preceded by white space) and trailing
 * white space: inih only knows ';' for inline comments. */
static void strip_inline_comment(char *v)
{
    for (char *c = v; *c; c++)
        if (*c == '#' && (c == v || c[-1] == ' ' || c[-1] == '\t')) {
            *c = '\0';
            break;
        }
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
        v[--n] = '\0';
}

static int fs_ini_handler(void *user, const char *section, const char *name, const char *value)
{
    struct ini_state *s = user;
    if (s->err_line)
        return 1; /* keep only the first error */
    char where[PARAM_STR_MAX];
    snprintf(where, sizeof where, "%s:%d", s->path, s->line);
    char v[PARAM_STR_MAX];
    snprintf(v, sizeof v, "%s", value);
    strip_inline_comment(v);
    if (section[0] == '\0') {
        errorf(s->err, s->errlen, "%s: key '%s' outside any [section]", where, name);
        s->err_line = s->line;
        return 0;
    }
    int id = find_param(section, name);
    if (id >= 0 && s->indented && id == s->last_id && s->set_line[id]) {
        /* an indented line after a key's: inih hands it as more of that key's value
         * (a long list over several lines); a string's goes on after a blank */
        char joined[PARAM_STR_MAX], first[PARAM_STR_MAX];
        snprintf(first, sizeof first, "%s:%d", s->path, s->set_line[id]);
        if (param_defs[id].type != PT_STRING) {
            errorf(s->err, s->errlen, "%s: an indented line continues '%s' of [%s] (line %d), "
                   "which is not a list: only text values (lists) go on over lines; or "
                   "unindent the line", where, name, section, s->set_line[id]);
            s->err_line = s->line;
            return 0;
        }
        if ((size_t)snprintf(joined, sizeof joined, "%s %s", s->p->str[id], v) >= sizeof joined) {
            errorf(s->err, s->errlen, "%s: '%s' of [%s] (from line %d) is longer than %d "
                   "characters", where, name, section, s->set_line[id], PARAM_STR_MAX - 1);
            s->err_line = s->line;
            return 0;
        }
        if (params_set(s->p, section, name, joined, first, s->err, s->errlen)) {
            s->err_line = s->line;
            return 0;
        }
        return 1;
    }
    if (id >= 0 && s->set_line[id]) {
        errorf(s->err, s->errlen, "%s: duplicate key '%s' in section [%s] (first set at line %d)",
               where, name, section, s->set_line[id]);
        s->err_line = s->line;
        return 0;
    }
    if (params_set(s->p, section, name, v, where, s->err, s->errlen)) {
        s->err_line = s->line;
        return 0;
    }
    s->set_line[id] = s->line;
    s->last_id = id;
    return 1;
}

/* Describe a line that inih rejected without calling the handler. */
static void syntax_error(const char *path, int line, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    char buf[256] = "";
    for (int i = 0; f && i < line; i++)
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
    if (f)
        fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    const char *t = buf + strspn(buf, " \t");
    if (t[0] == '[')
        errorf(err, errlen, "%s:%d: unterminated section header '%s' (expected '[name]')", path,
               line, t);
    else
        errorf(err, errlen, "%s:%d: expected 'key = value', '[section]' or a # comment, found '%s'",
               path, line, t);
}

int params_read_file(struct params *p, const char *path, char *err, size_t errlen)
{
    struct ini_state s = {.p = p, .path = path, .err = err, .errlen = errlen, .last_id = -1};
    s.f = fopen(path, "r");
    if (!s.f)
        return errorf(err, errlen, "%s: cannot open parameter file: %s", path, strerror(errno));
    int r = ini_parse_stream(fs_ini_reader, &s, fs_ini_handler, &s);
    int rerr = ferror(s.f);
    fclose(s.f);
    if (rerr)
        return errorf(err, errlen, "%s: read error", path);
    if (s.nul_line)
        return errorf(err, errlen, "%s:%d: a NUL byte in the line (a parameter file is text)",
                      path, s.nul_line);
    if (s.long_line && (r == 0 || s.long_line <= r))
        return errorf(err, errlen, "%s:%d: line longer than %d characters", path, s.long_line,
                      INI_MAX_LINE - 2);
    if (r == 0)
        return 0;
    if (r < 0)
        return errorf(err, errlen, "%s: inih failed (error %d)", path, r);
    if (r != s.err_line)
        syntax_error(path, r, err, errlen);
    return -1;
}

int params_override(struct params *p, const char *arg, const char *origin, char *err,
                    size_t errlen)
{
    const char *eq = strchr(arg, '=');
    const char *dot = strchr(arg, '.');
    if (!eq || !dot || dot > eq || dot == arg || dot + 1 == eq)
        return errorf(err, errlen, "%s: override '%s' is not of the form section.key=value",
                      origin, arg);
    char section[128], key[128];
    size_t ls = (size_t)(dot - arg), lk = (size_t)(eq - dot - 1);
    if (ls >= sizeof section || lk >= sizeof key)
        return errorf(err, errlen, "%s: override '%s': name too long", origin, arg);
    memcpy(section, arg, ls);
    section[ls] = '\0';
    memcpy(key, dot + 1, lk);
    key[lk] = '\0';
    return params_set(p, section, key, eq + 1, origin, err, errlen);
}

char *params_serialize(const struct params *p)
{
    size_t cap = 256, len = 0;
    for (int i = 0; i < P_COUNT; i++)
        cap += strlen(param_defs[i].section) + strlen(param_defs[i].key) + strlen(p->str[i]) + 3;
    char *s = xmalloc(cap);
    for (int i = 0; i < P_COUNT; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s.%s=%s\n", param_defs[i].section,
                                param_defs[i].key, p->str[i]);
    return s;
}

void params_dump(const struct params *p, FILE *out)
{
    fprintf(out, "# effective parameters\n");
    const char *section = "";
    for (int i = 0; i < P_COUNT; i++) {
        const struct param_def *d = &param_defs[i];
        if (strcmp(section, d->section)) {
            section = d->section;
            fprintf(out, "[%s]\n", section);
        }
        /* a long list over indented lines (inih reads at most 198 characters a line) */
        const char *v = p->str[i];
        fprintf(out, "%s =", d->key);
        for (size_t col = strlen(d->key) + 2; strlen(v) + col > 100;) {
            const char *cut = NULL;
            for (const char *c = v; *c && (size_t)(c - v) + col < 100; c++)
                if (c[0] == ',' && c[1] == ' ')
                    cut = c + 1;
            if (!cut)
                break;
            fprintf(out, " %.*s\n   ", (int)(cut - v), v);
            v = cut + 1;
            col = 4;
        }
        fprintf(out, "%s%s", v[0] ? " " : "", v);
        if (p->origin[i][0])
            fprintf(out, "    # from %s", p->origin[i]);
        fputc('\n', out);
    }
}

/* s as a JSON string */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        const unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

void params_json(const struct params *p, FILE *out)
{
    fprintf(out, "{\"event\":\"params\",\"params\":{");
    for (int i = 0; i < P_COUNT; i++) {
        char key[160];
        snprintf(key, sizeof key, "%s.%s", param_defs[i].section, param_defs[i].key);
        fputs(i ? "," : "", out);
        json_string(out, key);
        fputc(':', out);
        json_string(out, p->str[i]);
    }
    fprintf(out, "}}\n");
    fflush(out);
}

void params_help(FILE *out)
{
    fprintf(out, "Parameters (file: [section] key = value; command line: section.key=value)\n");
    const char *section = "";
    for (int i = 0; i < P_COUNT; i++) {
        const struct param_def *d = &param_defs[i];
        if (strcmp(section, d->section)) {
            section = d->section;
            fprintf(out, "\n[%s]\n", section);
        }
        char range[128];
        switch (d->type) {
        case PT_INT: snprintf(range, sizeof range, "integer in [%.17g, %.17g]", d->min, d->max); break;
        case PT_FLOAT: snprintf(range, sizeof range, "number in [%g, %g]", d->min, d->max); break;
        case PT_BOOL: snprintf(range, sizeof range, "on | off"); break;
        case PT_CHOICE: snprintf(range, sizeof range, "%s", d->choices); break;
        case PT_STRING: snprintf(range, sizeof range, "string"); break;
        }
        fprintf(out, "  %-16s default %-8s %s\n  %16s %s\n", d->key,
                d->def[0] ? d->def : "(empty)", range, "", d->help);
    }
}

/* Is c a character of a parameter's name (a boundary when it is not)? */
static int name_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

void params_locate(const struct params *p, char *err, size_t errlen)
{
    const char *first = NULL, *origin = NULL;
    for (int i = 0; i < P_COUNT; i++) {
        char name[160];
        if (!p->origin[i][0])
            continue;
        const size_t n = (size_t)snprintf(name, sizeof name, "%s.%s", param_defs[i].section,
                                          param_defs[i].key);
        for (const char *at = strstr(err, name); at; at = strstr(at + 1, name))
            if ((at == err || !name_char(at[-1])) && !name_char(at[n])) {
                if (!first || at < first) {
                    first = at;
                    origin = p->origin[i];
                }
                break;
            }
    }
    const size_t on = origin ? strlen(origin) : 0;
    if (!origin || (!strncmp(err, origin, on) && err[on] == ':'))
        return;
    char *was = xstrdup(err);
    snprintf(err, errlen, "%s: %s", origin, was);
    free(was);
}
