/* import_jsonl: the JSON-lines reader of 'freescale data import': one JSON
 * object per line, parsed by json-c (strict), fields chosen by name (the
 * Amazon review sets: reviewerID, asin, overall, unixReviewTime).
 *
 * Ids are JSON integers or, with string ids, JSON strings (an integer is
 * then taken as its decimal text); the rating is a JSON number, the time a
 * JSON integer (seconds). Anything else, a missing field, a value that is
 * not one object, or text after it is a bad line. */
#include <json.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "tools/import_priv.h"

/* "'a', 'b', ..." of the object's field names, for a message. */
static void field_list(json_object *obj, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    json_object_object_foreach(obj, key, val) {
        (void)val;
        if (used + 8 >= len)
            break;
        int w = snprintf(buf + used, len - used, "%s'%s'", used ? ", " : "", key);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used >= len)
        strcpy(buf + len - 5, "...");
}

/* Field c of obj, named name, into key / rating / ts; with the reason in
 * err and -1 when it is missing or not of the type needed. numbuf: room
 * for the text of an integer id. */
static int json_field(const struct reader *r, json_object *obj, int c, const char *name,
                      struct import_key *key, double *rating, int64_t *ts, char *numbuf,
                      char *err, size_t errlen)
{
    json_object *v;
    if (!json_object_object_get_ex(obj, name, &v)) {
        char list[400];
        field_list(obj, list, sizeof list);
        return errorf(err, errlen, "no field '%s' (fields: %s)", name, list);
    }
    enum json_type t = json_object_get_type(v);
    int is_id = c == IMPORT_USER || c == IMPORT_ITEM;
    int strings = is_id && (c == IMPORT_USER ? r->o->string_users : r->o->string_items);
    const char *hint = !is_id || strings ? ""
                       : c == IMPORT_USER ? " (string ids: --user-ids string)"
                                          : " (string ids: --item-ids string)";
    if (strings && t == json_type_string) {
        key->s = json_object_get_string(v);
        key->len = (size_t)json_object_get_string_len(v);
        if (key->len == 0)
            return errorf(err, errlen, "field '%s' is empty", name);
        if (key->len > IMPORT_MAX_ID_BYTES)
            return errorf(err, errlen, "field '%s' is longer than %d bytes", name,
                          IMPORT_MAX_ID_BYTES);
        return 0;
    }
    if (strings && t == json_type_int) {
        key->len = (size_t)snprintf(numbuf, 32, "%lld", (long long)json_object_get_int64(v));
        key->s = numbuf;
        return 0;
    }
    if (c == IMPORT_RATING && (t == json_type_int || t == json_type_double)) {
        *rating = json_object_get_double(v);
        return 0;
    }
    if (c != IMPORT_RATING && t == json_type_int) {
        *(is_id ? &key->i : ts) = json_object_get_int64(v);
        return 0;
    }
    if (c == IMPORT_TIME && t == json_type_double) { /* 1387670400.0 */
        double d = json_object_get_double(v);
        if (d == floor(d) && fabs(d) < 9.2e18) {
            *ts = (int64_t)d;
            return 0;
        }
    }
    static const char *kind[] = {[json_type_null] = "null", [json_type_boolean] = "a boolean",
                                 [json_type_double] = "a number with a fraction",
                                 [json_type_int] = "an integer", [json_type_object] = "an object",
                                 [json_type_array] = "an array", [json_type_string] = "a string"};
    const char *want = strings ? "a string or an integer" : c == IMPORT_RATING ? "a number"
                                                                              : "an integer";
    if (t == json_type_null)
        return errorf(err, errlen, "field '%s' is null, expected %s%s", name, want, hint);
    char b[48];
    const char *text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    return errorf(err, errlen, "field '%s' = %s is %s, expected %s%s", name,
                  import_shown(b, sizeof b, text, strlen(text)),
                  (unsigned)t < sizeof kind / sizeof *kind && kind[t] ? kind[t] : "not a value",
                  want, hint);
}

/* One line of text s[0 .. len) (no line end), not blank. */
static void jsonl_line(struct reader *r, json_tokener *tok, const char *s, size_t len,
                       const char *const name[IMPORT_NCOLS])
{
    int64_t line = r->ev->lines;
    json_tokener_reset(tok);
    json_object *obj = json_tokener_parse_ex(tok, s, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    if (!obj) {
        if (jerr == json_tokener_continue)
            import_bad_line(r, line, "malformed JSON: the value is not complete at the end "
                            "of the line");
        else
            import_bad_line(r, line, "malformed JSON at column %zu: %s", end + 1,
                            json_tokener_error_desc(jerr));
        return;
    }
    char b[48];
    if (end < len && !import_blank(s + end, len - end))
        import_bad_line(r, line, "malformed JSON: text after the value at column %zu ('%s')",
                        end + 1, import_shown(b, sizeof b, s + end, len - end));
    else if (!json_object_is_type(obj, json_type_object))
        import_bad_line(r, line, "not a JSON object but a JSON %s",
                        json_type_to_name(json_object_get_type(obj)));
    else {
        struct import_key key[2] = {{0}};
        double rating = 0;
        int64_t ts = 0;
        char err[640], num[2][32];
        int c;
        for (c = 0; c < IMPORT_NCOLS; c++)
            if (name[c] && json_field(r, obj, c, name[c], c < 2 ? &key[c] : NULL, &rating, &ts,
                                      num[c & 1], err, sizeof err)) {
                import_bad_line(r, line, "%s", err);
                break;
            }
        if (c == IMPORT_NCOLS) {
            /* event columns: a string as it is, any other value as its JSON text;
             * an absent field or null is an empty (missing) value */
            struct import_text ev[IMPORT_MAX_EVCOLS];
            for (int k = 0; k < r->o->nevcols; k++) {
                json_object *v = NULL;
                ev[k] = (struct import_text){"", 0};
                if (!json_object_object_get_ex(obj, r->o->evcol[k].name, &v) || !v)
                    continue;
                if (json_object_is_type(v, json_type_string))
                    ev[k].s = json_object_get_string(v),
                    ev[k].len = (size_t)json_object_get_string_len(v);
                else
                    ev[k].s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
                    ev[k].len = strlen(ev[k].s);
            }
            import_add_event(r, line, &key[0], &key[1], rating, ts, ev);
        }
    }
    json_object_put(obj);
}

void import_read_jsonl(struct reader *r, struct import_input *in)
{
    const struct import_options *o = r->o;
    const char *name[IMPORT_NCOLS] = {o->user_col, o->item_col, r->has_rating ? o->rating_col : NULL,
                                      r->has_time ? o->time_col : NULL};
    json_tokener *tok = json_tokener_new();
    if (!tok)
        fatal("json-c: json_tokener_new failed (out of memory?)");
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    char *s;
    size_t len;
    while (import_input_line(in, &s, &len)) {
        r->ev->lines = in->line;
        if (len && s[len - 1] == '\n')
            len--;
        if (len && s[len - 1] == '\r')
            len--;
        if (import_blank(s, len))
            continue;
        r->ev->rows++;
        if (len > (size_t)INT32_MAX / 2)
            import_bad_line(r, in->line, "line too long for JSON");
        else
            jsonl_line(r, tok, s, len, name);
    }
    json_tokener_free(tok);
    if (r->ev->rows == 0)
        fatal("%s: empty file (no events)", r->path);
}
