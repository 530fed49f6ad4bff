/* supervisor/conn/rpc.c: line framing and JSON-RPC 2.0 decoding of agent messages (see rpc.h).
 * Order of checks is the order of cost and of trust: length, UTF-8, depth, JSON, envelope. */
#include "supervisor/conn/rpc.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rpc_reader {
    char *buf;
    size_t cap;      /* allocated bytes */
    size_t start;    /* first byte not yet returned */
    size_t scan;     /* bytes before this have been searched for '\n' */
    size_t len;      /* bytes in buf */
    size_t max;      /* cap on one message */
    bool discarding; /* inside an over-long line: drop bytes until its '\n' */
    bool failed;     /* sticky: the connection is being failed */
};

struct rpc_reader *rpc_reader_new(size_t max_message)
{
    struct rpc_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->max = max_message ? max_message : RPC_DEFAULT_MAX_MESSAGE;
    return r;
}

void rpc_reader_free(struct rpc_reader *r)
{
    if (!r)
        return;
    free(r->buf);
    free(r);
}

static void reader_compact(struct rpc_reader *r)
{
    if (r->start == 0)
        return;
    memmove(r->buf, r->buf + r->start, r->len - r->start);
    r->len -= r->start;
    r->scan -= r->start;
    r->start = 0;
}

char *rpc_reader_space(struct rpc_reader *r, size_t want, size_t *room)
{
    if (want == 0)
        want = 1;
    reader_compact(r);
    if (r->cap - r->len < want) {
        /* Never more than one message plus one read: an over-long line is discarded, not kept. */
        size_t need = r->len + want;
        if (need < r->len)
            return NULL;
        size_t ncap = r->cap ? r->cap : 65536;
        while (ncap < need)
            ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
        char *nb = realloc(r->buf, ncap);
        if (!nb)
            return NULL;
        r->buf = nb;
        r->cap = ncap;
    }
    *room = r->cap - r->len;
    return r->buf + r->len;
}

void rpc_reader_commit(struct rpc_reader *r, size_t n)
{
    if (n > r->cap - r->len)
        n = r->cap - r->len;
    r->len += n;
}

int rpc_reader_feed(struct rpc_reader *r, const void *data, size_t len)
{
    size_t room;
    char *dst = rpc_reader_space(r, len, &room);
    if (!dst)
        return -ENOMEM;
    if (len)
        memcpy(dst, data, len);
    rpc_reader_commit(r, len);
    return 0;
}

static bool is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
            return false;
    return true;
}

enum rpc_frame rpc_reader_next(struct rpc_reader *r, const char **line, size_t *len)
{
    for (;;) {
        if (r->failed)
            return RPC_FRAME_FAILED;
        char *nl = r->len > r->scan ? memchr(r->buf + r->scan, '\n', r->len - r->scan) : NULL;
        if (!nl) {
            if (r->discarding) {
                r->start = r->scan = r->len = 0; /* still inside the over-long line: drop it */
                return RPC_FRAME_NONE;
            }
            if (r->len - r->start > r->max) {
                /* Answer as soon as the cap is passed, then drop the rest of the line as it comes. */
                r->discarding = true;
                r->start = r->scan = r->len = 0;
                return RPC_FRAME_TOO_LONG;
            }
            r->scan = r->len;
            return RPC_FRAME_NONE;
        }
        size_t end = (size_t)(nl - r->buf);
        const char *p = r->buf + r->start;
        size_t n = end - r->start;
        r->start = r->scan = end + 1;
        if (r->discarding) {
            r->discarding = false; /* the tail of an over-long line, already answered */
            continue;
        }
        if (n > 0 && p[n - 1] == '\r')
            n--;
        if (n > r->max)
            return RPC_FRAME_TOO_LONG;
        if (is_blank(p, n))
            continue;
        *line = p;
        *len = n;
        return RPC_FRAME_LINE;
    }
}

size_t rpc_reader_pending(const struct rpc_reader *r)
{
    return r->len - r->start;
}
const char *rpc_reader_peek(const struct rpc_reader *r)
{
    return r->buf ? r->buf + r->start : "";
}
bool rpc_reader_discarding(const struct rpc_reader *r)
{
    return r->discarding;
}
void rpc_reader_fail(struct rpc_reader *r)
{
    r->failed = true;
}
bool rpc_reader_failed(const struct rpc_reader *r)
{
    return r->failed;
}

/* ---- decoding ---- */

size_t rpc_utf8_check(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        if (c < 0x80) {
            /* ASCII, a word at a time: a tool answer's trail entry is checked whole on the
             * loop, and it is mostly ASCII (a byte at a time cost a 4 KiB read about 8 us). */
            i++;
            for (uint64_t w; len - i >= 8; i += 8) {
                memcpy(&w, p + i, 8);
                if (w & 0x8080808080808080ull)
                    break;
            }
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xBF; /* bounds of the second byte (RFC 3629 table) */
        if (c >= 0xC2 && c <= 0xDF)
            n = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            n = 3;
            if (c == 0xE0)
                lo = 0xA0; /* no overlongs */
            else if (c == 0xED)
                hi = 0x9F; /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F; /* nothing past U+10FFFF */
        } else
            return i;
        if (len - i < n)
            return i;
        if (p[i + 1] < lo || p[i + 1] > hi)
            return i;
        for (size_t k = 2; k < n; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xBF)
                return i;
        i += n;
    }
    return len;
}

/* Reads S the way a JSON parser does as far as brackets and strings go: brackets inside strings
 * do not count. On malformed input the figures are still upper bounds of what cJSON can make,
 * because cJSON stops at the first byte where its reading and this one could differ. Every value
 * but the first in an array or object follows a comma, and each container adds at most one
 * first value: 1 + commas + containers bounds the nodes. Stops once past either limit. */
static void json_scan(const char *s, size_t len, unsigned depth_limit, size_t values_limit,
                      unsigned *max_depth, size_t *values)
{
    unsigned depth = 0, max = 0;
    size_t n = 1;
    bool in_str = false;
    for (size_t i = 0; i < len && max <= depth_limit && n <= values_limit; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '[' || c == '{') {
            n++;
            if (++depth > max)
                max = depth;
        } else if (c == ',') {
            n++;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    *max_depth = max;
    *values = n;
}

unsigned rpc_json_depth(const char *s, size_t len, unsigned limit)
{
    unsigned depth;
    size_t n;
    json_scan(s, len, limit, SIZE_MAX - 1, &depth, &n);
    return depth > limit ? limit + 1 : depth;
}

size_t rpc_json_values(const char *s, size_t len, size_t limit)
{
    unsigned depth;
    size_t n;
    json_scan(s, len, UINT_MAX - 1, limit, &depth, &n);
    return n > limit ? limit + 1 : n;
}

static size_t node_cost(const cJSON *v)
{
    /* What a node costs the heap: the struct with malloc's header, its key and its string. */
    size_t n = sizeof(cJSON) + 16;
    if (v->string)
        n += strlen(v->string) + 17;
    if (v->valuestring)
        n += strlen(v->valuestring) + 17;
    for (const cJSON *c = v->child; c; c = c->next)
        n += node_cost(c);
    return n;
}

size_t rpc_json_cost(const cJSON *v)
{
    return v ? node_cost(v) : 0;
}

static int decode_fail(struct rpc_error *err, int code, const cJSON *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int decode_fail(struct rpc_error *err, int code, const cJSON *id, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    err->code = code;
    err->id = id ? cJSON_Duplicate(id, false) : NULL;
    return -EINVAL;
}

static bool valid_id(const cJSON *id)
{
    /* MCP: a string or an integer, never null. Any JSON number is accepted (JSON-RPC 2.0). */
    return cJSON_IsString(id) || cJSON_IsNumber(id);
}

/* Offset of the first \u0000 escape, or LEN. cJSON would decode it into a C string that ends
 * there, so `"ab\u0000cd"` would reach a tool as "ab" and be written as if complete. Outside
 * strings a backslash is invalid JSON anyway, so every backslash pair can be walked over. */
static size_t escaped_nul(const char *s, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] != '\\')
            continue;
        if (s[i + 1] == 'u' && i + 5 < len && s[i + 2] == '0' && s[i + 3] == '0' && s[i + 4] == '0' &&
            s[i + 5] == '0')
            return i;
        i++; /* skip the escaped character, so "\\\\u0000" in JSON (a backslash, then text) passes */
    }
    return len;
}

/* Length of a JSON number (RFC 8259 grammar) at S, or 0. */
static size_t json_number_len(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && s[i] == '-')
        i++;
    if (i < len && s[i] == '0')
        i++;
    else if (i < len && s[i] >= '1' && s[i] <= '9')
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return 0;
    if (i < len && s[i] == '.') {
        size_t d = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    return i;
}

static size_t skip_json_string(const char *s, size_t len, size_t i)
{
    for (i++; i < len && s[i] != '"'; i++)
        if (s[i] == '\\')
            i++;
    return i + 1;
}

/* The raw text of the top-level member "id" when it is a number: where and how long. Only a
 * key written plainly as "id" is found (an escaped spelling falls back to cJSON's value). */
static bool raw_number_id(const char *s, size_t len, size_t *off, size_t *n)
{
    size_t i = 0;
    unsigned depth = 0;
    bool want_key = false;
    while (i < len) {
        char c = s[i];
        if (c == '"') {
            size_t end = skip_json_string(s, len, i);
            if (depth == 1 && want_key) {
                bool is_id = end - i == 4 && !memcmp(s + i, "\"id\"", 4);
                size_t j = end;
                while (j < len && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n'))
                    j++;
                if (j < len && s[j] == ':')
                    j++;
                while (j < len && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n'))
                    j++;
                if (is_id) {
                    *off = j;
                    *n = json_number_len(s + j, len - j);
                    return *n > 0;
                }
                want_key = false;
                i = j;
                continue;
            }
            i = end;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
            want_key = depth == 1 && c == '{';
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == ',' && depth == 1) {
            want_key = true;
        }
        i++;
    }
    return false;
}

/* Whether cJSON prints NUM back as a number with the same value: not for 1e400 (printed as
 * null) or integers past 2^53 (printed rounded). */
static bool number_round_trips(const cJSON *num)
{
    double d = num->valuedouble;
    if (!isfinite(d))
        return false;
    char *p = cJSON_PrintUnformatted(num);
    bool same = p && strtod(p, NULL) == d;
    free(p);
    return same && fabs(d) < 9007199254740992.0;
}

/* The member "id" of a message parsed with every \u0000 made \u0001: when the id is a string
 * that differs from ROOT's, the NUL was inside the id itself, which then cannot be echoed. */
static bool id_holds_nul(const char *line, size_t len, const cJSON *id)
{
    if (!cJSON_IsString(id))
        return false;
    char *copy = malloc(len);
    if (!copy)
        return true;
    memcpy(copy, line, len);
    for (size_t at = escaped_nul(copy, len); at < len; at = escaped_nul(copy, len))
        copy[at + 5] = '1';
    cJSON *alt = cJSON_ParseWithLength(copy, len);
    free(copy);
    const cJSON *aid = cJSON_GetObjectItemCaseSensitive(alt, "id");
    bool differs = !cJSON_IsString(aid) || strcmp(aid->valuestring, id->valuestring) != 0;
    cJSON_Delete(alt);
    return differs;
}

int rpc_decode(const char *line, size_t len, unsigned max_depth, struct rpc_msg *msg,
               struct rpc_error *err)
{
    memset(msg, 0, sizeof(*msg));
    memset(err, 0, sizeof(*err));
    size_t bad = rpc_utf8_check(line, len);
    if (bad < len)
        return decode_fail(err, RPC_PARSE_ERROR, NULL, "parse error: invalid UTF-8 at byte %zu", bad);
    if (memchr(line, '\0', len))
        return decode_fail(err, RPC_PARSE_ERROR, NULL, "parse error: NUL byte at byte %zu",
                           (size_t)((const char *)memchr(line, '\0', len) - line));
    if (rpc_json_depth(line, len, max_depth) > max_depth)
        return decode_fail(err, RPC_INVALID_REQUEST, NULL,
                           "invalid request: nesting deeper than %u levels", max_depth);
    /* A parsed tree costs ~80 bytes a value ("[0,0,...]": 40 times its text): the count of values
     * bounds what one message can make the supervisor hold while it is handled. */
    if (rpc_json_values(line, len, RPC_MAX_VALUES) > RPC_MAX_VALUES)
        return decode_fail(err, RPC_INVALID_REQUEST, NULL,
                           "invalid request: more than %u JSON values in one message", RPC_MAX_VALUES);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, false);
    if (!root) {
        size_t at = end && end >= line && end <= line + len ? (size_t)(end - line) : 0;
        return decode_fail(err, RPC_PARSE_ERROR, NULL, "parse error: invalid JSON near byte %zu", at);
    }
    for (const char *p = end; p && p < line + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(root);
            return decode_fail(err, RPC_PARSE_ERROR, NULL,
                               "parse error: more than one JSON value on the line (byte %zu)",
                               (size_t)(p - line));
        }
    }
    int rc;
    if (cJSON_IsArray(root)) {
        rc = decode_fail(err, RPC_INVALID_REQUEST, NULL,
                         "invalid request: batches are not supported; send one message per line");
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        rc = decode_fail(err, RPC_INVALID_REQUEST, NULL,
                         "invalid request: a message must be a JSON object");
        goto out;
    }
    /* Each envelope member once: a duplicate would let two readers of the same line (the
     * dispatcher and the trail) see different requests. */
    static const char *const members[] = {"jsonrpc", "id", "method", "params", "result", "error"};
    const cJSON *seen[6] = {0};
    for (const cJSON *it = root->child; it; it = it->next) {
        for (size_t k = 0; k < ARRAY_SIZE(members); k++) {
            if (it->string && !strcmp(it->string, members[k])) {
                if (seen[k]) {
                    rc = decode_fail(err, RPC_INVALID_REQUEST, NULL,
                                     "invalid request: member \"%s\" appears twice", members[k]);
                    goto out;
                }
                seen[k] = it;
            }
        }
    }
    const cJSON *version = seen[0], *id = seen[1], *method = seen[2], *params = seen[3];
    const cJSON *result = seen[4], *error = seen[5];
    if (id && !valid_id(id)) {
        rc = decode_fail(err, RPC_INVALID_REQUEST, NULL,
                         "invalid request: \"id\" must be a string or a number");
        goto out;
    }
    /* An id cJSON cannot print back as sent is kept as the client's own text, so that the
     * answer carries exactly the id the client waits for. */
    size_t id_off, id_len;
    if (cJSON_IsNumber(id) && !number_round_trips(id) && raw_number_id(line, len, &id_off, &id_len)) {
        char *text = strndup(line + id_off, id_len);
        cJSON *raw = text ? cJSON_CreateRaw(text) : NULL;
        free(text);
        if (!raw || !cJSON_ReplaceItemViaPointer(root, (cJSON *)id, raw)) {
            cJSON_Delete(raw);
            rc = decode_fail(err, RPC_INTERNAL_ERROR, NULL, "internal error: out of memory");
            goto out;
        }
        id = raw;
    }
    size_t esc = escaped_nul(line, len);
    if (esc < len) {
        /* Valid JSON, but a string would reach its reader cut short at the NUL. The client
         * waits for its own id: answer with it unless the NUL is inside the id itself. */
        const cJSON *echo = id && !id_holds_nul(line, len, id) ? id : NULL;
        rc = decode_fail(err, echo ? RPC_INVALID_PARAMS : RPC_PARSE_ERROR, echo,
                         "%s: \\u0000 in a string at byte %zu (a NUL would silently cut the string "
                         "short: send the text without it)",
                         echo ? "invalid params" : "parse error", esc);
        goto out;
    }
    if (!cJSON_IsString(version) || strcmp(version->valuestring, "2.0")) {
        rc = decode_fail(err, RPC_INVALID_REQUEST, id, "invalid request: \"jsonrpc\" must be \"2.0\"");
        goto out;
    }
    if (!method) {
        if ((result || error) && id && !(result && error) && !params) {
            msg->root = root;
            msg->id = id;
            msg->response = true;
            msg->result = result;
            msg->error = error;
            return 0;
        }
        if (result || error)
            rc = decode_fail(
                err, RPC_INVALID_REQUEST, id,
                "invalid request: a response needs an id and exactly one of result and error");
        else
            rc = decode_fail(err, RPC_INVALID_REQUEST, id, "invalid request: \"method\" is missing");
        goto out;
    }
    if (!cJSON_IsString(method) || !method->valuestring[0]) {
        rc = decode_fail(err, RPC_INVALID_REQUEST, id,
                         "invalid request: \"method\" must be a non-empty string");
        goto out;
    }
    if (params && !cJSON_IsObject(params) && !cJSON_IsArray(params)) {
        rc = decode_fail(err, RPC_INVALID_REQUEST, id,
                         "invalid request: \"params\" must be an object or an array");
        goto out;
    }
    msg->root = root;
    msg->method = method->valuestring;
    msg->id = id;
    msg->params = params;
    return 0;
out:
    cJSON_Delete(root);
    return rc;
}

void rpc_msg_clear(struct rpc_msg *msg)
{
    cJSON_Delete(msg->root);
    memset(msg, 0, sizeof(*msg));
}

void rpc_error_clear(struct rpc_error *err)
{
    cJSON_Delete(err->id);
    err->id = NULL;
}

/* ---- encoding ---- */

/* The answer's JSON, byte for byte what cJSON_PrintUnformatted prints, in about a third of its
 * time: cJSON escapes strings one byte at a time in two passes (count, then copy), and an
 * answer carries its content twice (the text and structuredContent, the text itself JSON), which
 * made that escaping 40% of a 4 KiB read's CPU on the loop. Here runs of bytes that need no
 * escape go out in one copy. Numbers are rare in answers and go through cJSON, so their form
 * stays cJSON's. */
struct rpc_out {
    char *p;
    size_t len, cap;
    bool failed;
};

static void out_put(struct rpc_out *o, const void *s, size_t n)
{
    if (o->failed)
        return;
    if (o->cap - o->len < n + 2) {
        size_t cap = o->cap ? o->cap : 256;
        while (cap - o->len < n + 2) {
            if (cap > SIZE_MAX / 2) {
                o->failed = true;
                return;
            }
            cap *= 2;
        }
        char *q = realloc(o->p, cap);
        if (!q) {
            o->failed = true;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void out_string(struct rpc_out *o, const char *s)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)u), i = 0;
    out_put(o, "\"", 1);
    while (i < n) {
        size_t run = util_json_plain(u + i, n - i);
        out_put(o, u + i, run);
        i += run;
        if (i < n) {
            char esc[6];
            out_put(o, esc, util_json_escape(u[i++], esc));
        }
    }
    out_put(o, "\"", 1);
}

static void out_value(struct rpc_out *o, const cJSON *v, unsigned depth)
{
    if (o->failed)
        return;
    if (depth > RPC_PRINT_DEPTH_MAX) { /* cJSON's own nesting limit is far below this */
        o->failed = true;
        return;
    }
    switch (v->type & 0xff) {
    case cJSON_NULL: out_put(o, "null", 4); return;
    case cJSON_False: out_put(o, "false", 5); return;
    case cJSON_True: out_put(o, "true", 4); return;
    case cJSON_String: out_string(o, v->valuestring); return;
    case cJSON_Raw:
        if (!v->valuestring) {
            o->failed = true;
            return;
        }
        out_put(o, v->valuestring, strlen(v->valuestring));
        return;
    case cJSON_Number: {
        /* An integer below 1e15 (sizes, line counts, ids) is what cJSON's "%1.15g" prints it as,
         * its digits, and its sscanf check passes: printed here without that printf and scanf
         * pair, which cost a read's answer more than its escaping. -0 keeps cJSON's "-0". */
        double d = v->valuedouble;
        if (d > -1e15 && d < 1e15 && d == (double)(long long)d && !(d == 0 && signbit(d))) {
            char digits[24];
            int n = snprintf(digits, sizeof(digits), "%lld", (long long)d);
            out_put(o, digits, (size_t)n);
            return;
        }
        cJSON one = *v; /* printed alone: cJSON's number form, without its siblings */
        one.next = one.prev = NULL;
        one.string = NULL;
        char *t = cJSON_PrintUnformatted(&one);
        if (!t) {
            o->failed = true;
            return;
        }
        out_put(o, t, strlen(t));
        free(t);
        return;
    }
    case cJSON_Array:
    case cJSON_Object: {
        bool obj = (v->type & 0xff) == cJSON_Object;
        out_put(o, obj ? "{" : "[", 1);
        for (const cJSON *c = v->child; c; c = c->next) {
            if (c != v->child)
                out_put(o, ",", 1);
            if (obj) {
                out_string(o, c->string); /* a key-less member: "", as cJSON prints it */
                out_put(o, ":", 1);
            }
            out_value(o, c, depth + 1);
        }
        out_put(o, obj ? "}" : "]", 1);
        return;
    }
    default: o->failed = true;
    }
}

char *rpc_json_print(const cJSON *v, size_t *len)
{
    struct rpc_out o = {0};
    out_value(&o, v, 0);
    out_put(&o, "", 0);
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    o.p[o.len] = '\0';
    if (len)
        *len = o.len;
    return o.p;
}

static char *envelope_line(cJSON *env, size_t *len)
{
    struct rpc_out o = {0};
    out_value(&o, env, 0);
    cJSON_Delete(env);
    /* Control characters in strings are escaped, so the only raw newline is this one. */
    out_put(&o, "\n", 1);
    if (o.failed) {
        free(o.p);
        return NULL;
    }
    o.p[o.len] = '\0';
    *len = o.len;
    return o.p;
}

static cJSON *envelope_new(const cJSON *id)
{
    cJSON *env = cJSON_CreateObject();
    if (!env)
        return NULL;
    cJSON *idv = id ? cJSON_Duplicate(id, false) : cJSON_CreateNull();
    if (!cJSON_AddStringToObject(env, "jsonrpc", "2.0") || !idv) {
        cJSON_Delete(idv);
        cJSON_Delete(env);
        return NULL;
    }
    cJSON_AddItemToObject(env, "id", idv);
    return env;
}

char *rpc_result_line(const cJSON *id, const cJSON *result, size_t *len)
{
    cJSON *env = envelope_new(id);
    if (!env)
        return NULL;
    /* A reference: the result (possibly megabytes of file content) is printed, not copied. */
    if (!cJSON_AddItemReferenceToObject(env, "result", (cJSON *)result)) {
        cJSON_Delete(env);
        return NULL;
    }
    return envelope_line(env, len);
}

char *rpc_error_line(const cJSON *id, int code, const char *message, const cJSON *data, size_t *len)
{
    cJSON *env = envelope_new(id);
    if (!env)
        return NULL;
    cJSON *e = cJSON_AddObjectToObject(env, "error");
    if (!e || !cJSON_AddNumberToObject(e, "code", code) ||
        !cJSON_AddStringToObject(e, "message", message) ||
        (data && !cJSON_AddItemReferenceToObject(e, "data", (cJSON *)data))) {
        cJSON_Delete(env);
        return NULL;
    }
    return envelope_line(env, len);
}
