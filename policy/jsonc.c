/* policy/jsonc.c: JSON with // and block comments, parsed by cJSON, plus the byte offset of every
 * key and value so that each problem can be reported as FILE:LINE:COL. */
#include "policy/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int policy_diags_add(struct policy_diags *d, const char *file, int line, int col, const char *fmt, ...)
{
    if (!d)
        return 0;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        struct policy_diag *v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int r = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -ENOMEM;
    char *f = strdup(file ? file : "-");
    if (!f) {
        free(msg);
        return -ENOMEM;
    }
    d->v[d->n++] = (struct policy_diag){.file = f, .line = line, .col = col, .message = msg};
    return 0;
}

void policy_diags_free(struct policy_diags *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].file);
        free(d->v[i].message);
    }
    free(d->v);
    *d = (struct policy_diags){0};
}

void policy_diags_print(const struct policy_diags *d, FILE *f)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct policy_diag *g = &d->v[i];
        if (g->line > 0)
            fprintf(f, "%s:%d:%d: %s\n", g->file, g->line, g->col, g->message);
        else
            fprintf(f, "%s: %s\n", g->file, g->message);
    }
}

void jsonc_where(const struct jsonc_doc *doc, size_t off, int *line, int *col)
{
    if (off > doc->len)
        off = doc->len;
    int l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        unsigned char ch = (unsigned char)doc->text[i];
        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xC0) != 0x80) { /* count characters, not UTF-8 continuation bytes */
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* Blanks comments and trailing commas (",  }") to spaces so offsets stay those of the file.
 * Returns 0, or as a negative the offset+1 of an unterminated block comment / string start, or
 * of a comma with no value before it (",," or "{,"): blanking one comma of a pair would hide it
 * and send the admin to the token after it, so it is reported where it is. */
static long strip(char *t, size_t len)
{
    size_t i = 0;
    size_t last_comma = SIZE_MAX; /* a comma with only blanks after it so far */
    char prev = 0;                /* the last character outside strings, comments and blanks */
    while (i < len) {
        char c = t[i];
        if (c == '"') {
            size_t start = i++;
            while (i < len && t[i] != '"') {
                if (t[i] == '\\' && i + 1 < len)
                    i++;
                i++;
            }
            if (i >= len)
                return -(long)start - 1;
            i++;
            last_comma = SIZE_MAX;
            prev = '"';
            continue;
        }
        if (c == '/' && i + 1 < len && t[i + 1] == '/') {
            while (i < len && t[i] != '\n')
                t[i++] = ' ';
            continue;
        }
        if (c == '/' && i + 1 < len && t[i + 1] == '*') {
            size_t start = i;
            t[i++] = ' ';
            t[i++] = ' ';
            while (i < len && !(t[i] == '*' && i + 1 < len && t[i + 1] == '/')) {
                if (t[i] != '\n')
                    t[i] = ' ';
                i++;
            }
            if (i >= len)
                return -(long)start - 1;
            t[i++] = ' ';
            t[i++] = ' ';
            continue;
        }
        if (c == ',') {
            if (prev == ',' || prev == '{' || prev == '[')
                return -(long)i - 1;
            last_comma = i;
        } else if ((c == '}' || c == ']') && last_comma != SIZE_MAX) {
            t[last_comma] = ' ';
            last_comma = SIZE_MAX;
        } else if ((unsigned char)c > 32) {
            last_comma = SIZE_MAX;
        }
        if ((unsigned char)c > 32)
            prev = c;
        i++;
    }
    return 0;
}

/* ---- the position scanner: visits values in the same pre-order as a cJSON tree walk. */
struct scan {
    const char *t;
    size_t len, i;
    struct jpos *pos;
    size_t n, cap;
    int depth;
};

static void skip_ws(struct scan *s)
{
    while (s->i < s->len && (unsigned char)s->t[s->i] <= 32)
        s->i++;
}

static void skip_string(struct scan *s)
{
    s->i++; /* opening quote */
    while (s->i < s->len && s->t[s->i] != '"') {
        if (s->t[s->i] == '\\')
            s->i++;
        s->i++;
    }
    s->i++;
}

static int push(struct scan *s, size_t key, size_t val)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct jpos *v = realloc(s->pos, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->pos = v;
        s->cap = cap;
    }
    s->pos[s->n++] = (struct jpos){.node = NULL, .key_off = key, .val_off = val};
    return 0;
}

static int scan_value(struct scan *s, size_t key)
{
    skip_ws(s);
    if (s->i >= s->len || ++s->depth > CJSON_NESTING_LIMIT + 1)
        return -EINVAL;
    int r = push(s, key, s->i);
    if (r < 0)
        return r;
    char c = s->t[s->i];
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        s->i++;
        for (;;) {
            skip_ws(s);
            if (s->i >= s->len)
                return -EINVAL;
            if (s->t[s->i] == close) {
                s->i++;
                break;
            }
            if (s->t[s->i] == ',') {
                s->i++;
                continue;
            }
            size_t k = SIZE_MAX;
            if (c == '{') {
                k = s->i;
                skip_string(s);
                skip_ws(s);
                if (s->i >= s->len || s->t[s->i] != ':')
                    return -EINVAL;
                s->i++;
            }
            r = scan_value(s, k);
            if (r < 0)
                return r;
        }
    } else if (c == '"') {
        skip_string(s);
    } else {
        while (s->i < s->len && !strchr(",}]", s->t[s->i]) && (unsigned char)s->t[s->i] > 32)
            s->i++;
    }
    s->depth--;
    return 0;
}

static void assign(const cJSON *n, struct jpos *pos, size_t npos, size_t *idx, bool *ok)
{
    for (; n; n = n->next) {
        if (*idx >= npos) {
            *ok = false;
            return;
        }
        pos[(*idx)++].node = n;
        if (n->child)
            assign(n->child, pos, npos, idx, ok);
    }
}

static int cmp_pos(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct jpos *)a)->node;
    uintptr_t y = (uintptr_t)((const struct jpos *)b)->node;
    return x < y ? -1 : x > y;
}

static const struct jpos *find_pos(const struct jsonc_doc *doc, const cJSON *n)
{
    struct jpos key = {.node = n};
    if (!doc->pos)
        return NULL;
    return bsearch(&key, doc->pos, doc->n_pos, sizeof(key), cmp_pos);
}

size_t jsonc_val_off(const struct jsonc_doc *doc, const cJSON *n)
{
    const struct jpos *p = find_pos(doc, n);
    return p ? p->val_off : 0;
}

size_t jsonc_key_off(const struct jsonc_doc *doc, const cJSON *n)
{
    const struct jpos *p = find_pos(doc, n);
    if (!p)
        return 0;
    return p->key_off == SIZE_MAX ? p->val_off : p->key_off;
}

static void syntax_error(struct jsonc_doc *doc, size_t off, struct policy_diags *d)
{
    int line, col;
    if (off > doc->len)
        off = doc->len;
    /* cJSON reports where it stopped; step back over blanks to the token it choked on. */
    size_t at = off;
    while (at > 0 && at >= doc->len)
        at--;
    while (at > 0 && (unsigned char)doc->text[at] <= 32)
        at--;
    jsonc_where(doc, at, &line, &col);
    size_t nb = 0;
    for (size_t i = 0; i < doc->len; i++)
        nb += (unsigned char)doc->text[i] > 32;
    if (nb == 0) {
        policy_diags_add(d, doc->name, 1, 1, "the file is empty; a policy is a JSON object: {}");
        return;
    }
    char tok[16] = "";
    size_t k = 0;
    for (size_t i = at; i < doc->len && k < 12 && (unsigned char)doc->text[i] > 32; i++) {
        tok[k++] = doc->text[i];
        if (strchr("{}[],:\"", doc->text[i]))
            break;
    }
    tok[k] = '\0';
    /* A member following another without a comma is the commonest slip. */
    size_t prev = at;
    while (prev > 0 && (unsigned char)doc->text[prev - 1] <= 32)
        prev--;
    const char *hint = "";
    if (doc->text[at] == '"' && prev > 0 && strchr("\"0123456789el]}", doc->text[prev - 1]))
        hint = "; is a ',' missing before it?";
    else if (doc->text[at] == '\'')
        hint = "; strings take double quotes";
    bool rest_blank = true; /* nothing but blanks from where cJSON stopped: the file ended early */
    for (size_t i = off; i < doc->len && rest_blank; i++)
        rest_blank = (unsigned char)doc->text[i] <= 32;
    if (rest_blank)
        policy_diags_add(d, doc->name, line, col,
                         "syntax error: unexpected end of file; is a closing '}' or ']' missing?");
    else
        policy_diags_add(d, doc->name, line, col, "syntax error near '%s'%s", tok, hint);
}

int jsonc_parse(struct jsonc_doc *doc, const char *name, const char *data, size_t len,
                struct policy_diags *d)
{
    *doc = (struct jsonc_doc){.name = name};
    if (len > 16u << 20)
        return policy_diags_add(d, name, 0, 0, "the file is larger than 16 MiB; a policy is small"),
               -EFBIG;
    doc->text = malloc(len + 1);
    if (!doc->text)
        return -ENOMEM;
    memcpy(doc->text, data, len);
    doc->text[len] = '\0';
    doc->len = len;
    const char *nul = memchr(data, '\0', len);
    if (nul) {
        int line, col;
        jsonc_where(doc, (size_t)(nul - data), &line, &col);
        policy_diags_add(d, name, line, col, "a NUL byte in the file; a policy is UTF-8 text");
        return -EINVAL;
    }
    long s = strip(doc->text, len);
    if (s < 0) {
        int line, col;
        size_t off = (size_t)(-s - 1);
        jsonc_where(doc, off, &line, &col);
        if (data[off] == '"')
            policy_diags_add(d, name, line, col, "unterminated string; close it with '\"'");
        else if (data[off] == ',')
            policy_diags_add(d, name, line, col,
                             "syntax error: a ',' with no value before it; remove it");
        else
            policy_diags_add(d, name, line, col, "unterminated /* comment; close it with */");
        return -EINVAL;
    }
    const char *end = NULL;
    doc->root = cJSON_ParseWithOpts(doc->text, &end, 1);
    if (!doc->root) {
        syntax_error(doc, end ? (size_t)(end - doc->text) : 0, d);
        return -EINVAL;
    }
    struct scan sc = {.t = doc->text, .len = len};
    bool ok = scan_value(&sc, SIZE_MAX) == 0;
    size_t idx = 0;
    if (ok)
        assign(doc->root, sc.pos, sc.n, &idx, &ok);
    if (ok && idx == sc.n) {
        qsort(sc.pos, sc.n, sizeof(*sc.pos), cmp_pos);
        doc->pos = sc.pos;
        doc->n_pos = sc.n;
    } else {
        free(sc.pos); /* positions unknown: messages then point at 1:1, still every problem */
    }
    return 0;
}

void jsonc_free(struct jsonc_doc *doc)
{
    cJSON_Delete(doc->root);
    free(doc->text);
    free(doc->pos);
    *doc = (struct jsonc_doc){0};
}

size_t policy_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return SIZE_MAX;
    size_t row[65];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *policy_suggest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bd = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t dd = policy_edit_distance(word, cands[i]);
        if (dd < bd) {
            bd = dd;
            best = cands[i];
        }
    }
    size_t lim = strlen(word) <= 4 ? 1 : strlen(word) <= 8 ? 2 : 3;
    return bd <= lim ? best : NULL;
}
