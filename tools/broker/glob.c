/* tools/broker/glob.c: see glob.h. The pattern compiles to a list of tokens; matching runs the token
 * automaton over the subject with a set of live states (Thompson style), so time is bounded by
 * tokens x bytes whatever the pattern. */
#include "tools/broker/glob.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum tok_kind {
    T_LIT,       /* one byte */
    T_ANY,       /* ? */
    T_CLASS,     /* [...] */
    T_STAR,      /* * : any run without '/' */
    T_DSTAR,     /* trailing ** : anything */
    T_DSTAR_DIR, /* double star then slash: empty, or anything ending in a slash */
};

struct tok {
    enum tok_kind kind;
    unsigned char c;
    uint8_t set[32]; /* T_CLASS bitmap, already negated when [!...] */
};

struct glob {
    size_t n;
    struct tok t[];
};

static void set_bit(uint8_t *set, unsigned char c)
{
    set[c >> 3] |= (uint8_t)(1u << (c & 7));
}
static bool has_bit(const uint8_t *set, unsigned char c)
{
    return set[c >> 3] & (1u << (c & 7));
}

/* Parses the class starting after '['; returns bytes consumed up to and including ']', 0 if
 * unterminated. */
static size_t parse_class(const char *p, struct tok *t)
{
    size_t i = 0;
    bool neg = false;
    if (p[i] == '!' || p[i] == '^') {
        neg = true;
        i++;
    }
    memset(t->set, 0, sizeof(t->set));
    bool first = true;
    while (p[i] && (p[i] != ']' || first)) {
        unsigned char lo = (unsigned char)p[i];
        if (lo == '\\' && p[i + 1])
            lo = (unsigned char)p[++i];
        i++;
        unsigned char hi = lo;
        if (p[i] == '-' && p[i + 1] && p[i + 1] != ']') {
            hi = (unsigned char)p[i + 1];
            if (hi == '\\' && p[i + 2])
                hi = (unsigned char)p[++i + 1];
            i += 2;
        }
        for (unsigned c = lo; c <= hi; c++)
            set_bit(t->set, (unsigned char)c);
        first = false;
    }
    if (p[i] != ']')
        return 0;
    if (neg)
        for (size_t k = 0; k < sizeof(t->set); k++)
            t->set[k] = (uint8_t)~t->set[k];
    t->set['/' >> 3] &= (uint8_t) ~(1u << ('/' & 7)); /* a class never matches '/' */
    return i + 1;
}

int glob_new(const char *pattern, struct glob **out)
{
    *out = NULL;
    size_t len = pattern ? strnlen(pattern, GLOB_MAX_PATTERN + 1) : 0;
    if (len == 0 || len > GLOB_MAX_PATTERN)
        return -EINVAL;
    struct glob *g = calloc(1, sizeof(*g) + (len + 1) * sizeof(struct tok));
    if (!g)
        return -ENOMEM;
    const char *p = pattern;
    size_t i = 0;
    while (p[i]) {
        struct tok *t = &g->t[g->n];
        bool seg_start = i == 0 || p[i - 1] == '/';
        if (p[i] == '*' && p[i + 1] == '*' && seg_start && (p[i + 2] == '/' || p[i + 2] == '\0')) {
            if (p[i + 2] == '/') {
                t->kind = T_DSTAR_DIR;
                i += 3;
            } else {
                t->kind = T_DSTAR;
                i += 2;
            }
        } else if (p[i] == '*') {
            t->kind = T_STAR;
            while (p[i] == '*')
                i++;
        } else if (p[i] == '?') {
            t->kind = T_ANY;
            i++;
        } else if (p[i] == '[') {
            size_t used = parse_class(p + i + 1, t);
            if (!used) {
                free(g);
                return -EINVAL;
            }
            t->kind = T_CLASS;
            i += 1 + used;
        } else {
            if (p[i] == '\\') {
                if (!p[i + 1]) {
                    free(g);
                    return -EINVAL;
                }
                i++;
            }
            t->kind = T_LIT;
            t->c = (unsigned char)p[i++];
        }
        g->n++;
    }
    *out = g;
    return 0;
}

void glob_free(struct glob *g)
{
    free(g);
}

/* Adds state s and everything reachable from it without consuming a byte. */
static void add_state(const struct glob *g, uint8_t *live, size_t s)
{
    while (s <= g->n && !live[s]) {
        live[s] = 1;
        if (s == g->n)
            return;
        enum tok_kind k = g->t[s].kind;
        if (k != T_STAR && k != T_DSTAR && k != T_DSTAR_DIR)
            return;
        s++;
    }
}

bool glob_matches(const struct glob *g, const char *path)
{
    if (!g || !path)
        return false;
    uint8_t small[2][64];
    uint8_t *buf = NULL;
    uint8_t *cur, *next;
    if (g->n + 1 <= sizeof(small[0])) {
        cur = small[0];
        next = small[1];
    } else {
        buf = malloc(2 * (g->n + 1));
        if (!buf)
            return false;
        cur = buf;
        next = buf + g->n + 1;
    }
    memset(cur, 0, g->n + 1);
    add_state(g, cur, 0);
    bool any = true;
    for (const unsigned char *c = (const unsigned char *)path; *c && any; c++) {
        memset(next, 0, g->n + 1);
        any = false;
        for (size_t s = 0; s < g->n; s++) {
            if (!cur[s])
                continue;
            const struct tok *t = &g->t[s];
            switch (t->kind) {
            case T_LIT:
                if (*c == t->c)
                    add_state(g, next, s + 1), any = true;
                break;
            case T_ANY:
                if (*c != '/')
                    add_state(g, next, s + 1), any = true;
                break;
            case T_CLASS:
                if (has_bit(t->set, *c))
                    add_state(g, next, s + 1), any = true;
                break;
            case T_STAR:
                if (*c != '/')
                    add_state(g, next, s), any = true;
                break;
            case T_DSTAR: add_state(g, next, s), any = true; break;
            case T_DSTAR_DIR:
                /* Mid-segment it only stays; the empty way on opens after a '/' alone, so the
                 * next token starts a whole segment. */
                next[s] = 1, any = true;
                if (*c == '/')
                    add_state(g, next, s + 1);
                break;
            }
        }
        uint8_t *tmp = cur;
        cur = next;
        next = tmp;
    }
    bool ok = any && cur[g->n];
    free(buf);
    return ok;
}

bool glob_match(const char *pattern, const char *path)
{
    struct glob *g;
    if (glob_new(pattern, &g) < 0)
        return false;
    bool r = glob_matches(g, path);
    glob_free(g);
    return r;
}
