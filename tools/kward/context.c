/* tools/kward/context.c: context_for_task (outlines and matching excerpts within a byte budget)
 * and context_budget_stats (the session's counters) (docs/protocol-kward.md). */
#include "tools/broker/broker.h"
#include "tools/kward/internal.h"
#include "tools/kward/kward.h"
#include "tools/session.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* ---- context_for_task ----------------------------------------------------------------------- */

enum { CTX_TASK, CTX_PATHS, CTX_BUDGET };
const struct tool_param kward_context_params[] = {
    {"task", TOOL_PARAM_STRING, true, "Task or question to gather context for.", NULL, 0, 0},
    {"paths", TOOL_PARAM_STRINGS, false, "Optional workspace-relative files or directories to focus.",
     NULL, 0, MAX_PATHS},
    {"budget", TOOL_PARAM_INT, false,
     "Approximate byte budget for the returned context. Default 4000, maximum 20000.", NULL, -MAX_INT,
     MAX_INT},
};

#define CTX_DEFAULT_BUDGET 4000
#define CTX_MAX_BUDGET 20000
#define CTX_MAX_FILES 8
#define CTX_MAX_CANDIDATES (CTX_MAX_FILES * 8)
#define CTX_MAX_MATCHES 8
#define CTX_MAX_TERMS 20
#define CTX_MAX_WALK 20000

static const char *const ctx_extensions[] = {".rb", ".js",   ".jsx",  ".ts",   ".tsx",  ".py", ".go",
                                             ".rs", ".java", ".cs",   ".cpp",  ".c",    ".h",  ".hpp",
                                             ".md", ".yml",  ".yaml", ".json", ".toml", NULL};
static const char *const ctx_skip[] = {".git", ".yardoc", "_yardoc",  "node_modules", "vendor", "tmp",
                                       "log",  ".bundle", "coverage", "dist",         "build"};
static const char *const ctx_stopwords[] = {
    "the",    "and",   "for",     "with",    "from",    "this",  "that",   "into",   "when",
    "where",  "what",  "why",     "how",     "fix",     "add",   "update", "change", "implement",
    "review", "debug", "explain", "failing", "failure", "error", "issue",  NULL};

static bool context_name_ok(const char *rel)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    if (!strcmp(base, "Gemfile"))
        return true;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return false;
    for (const char *const *e = ctx_extensions; *e; e++)
        if (!strcmp(dot, *e))
            return true;
    return false;
}

struct cand {
    char *rel;
    long score;
};

struct terms {
    char v[CTX_MAX_TERMS][64];
    size_t n;
};

static void terms_of(const char *task, struct terms *t)
{
    t->n = 0;
    for (const char *p = task; *p && t->n < CTX_MAX_TERMS;) {
        if (!(isalpha((unsigned char)*p) || *p == '_')) {
            p++;
            continue;
        }
        const char *q = p;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        size_t len = (size_t)(q - p);
        if (len >= 3 && len < sizeof(t->v[0])) {
            char w[64];
            for (size_t i = 0; i < len; i++)
                w[i] = (char)tolower((unsigned char)p[i]);
            w[len] = '\0';
            bool skip = false;
            for (const char *const *s = ctx_stopwords; *s && !skip; s++)
                skip = !strcmp(*s, w);
            for (size_t i = 0; i < t->n && !skip; i++)
                skip = !strcmp(t->v[i], w);
            if (!skip)
                memcpy(t->v[t->n++], w, len + 1);
        }
        p = q;
    }
}

static char *lower_dup(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (!d)
        return NULL;
    for (size_t i = 0; i < len; i++)
        d[i] = (char)tolower((unsigned char)s[i]);
    d[len] = '\0';
    return d;
}

static long count_term(const char *hay, size_t len, const char *term)
{
    long n = 0;
    size_t tl = strlen(term);
    for (const char *p = hay; (p = memmem(p, len - (size_t)(p - hay), term, tl)); p += tl)
        n++;
    return n;
}

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return strcmp(x->rel, y->rel);
}

/* Adds the readable candidate files under (or at) ROOT, in walk order, up to the limit. */
static int gather(struct call *c, const char *root, struct cand *v, size_t *n)
{
    struct broker_meta m;
    if (broker_info(c->ctx, root, "paths", &m, &c->e) < 0)
        return -1;
    bool dir = m.is_dir;
    char *rel = m.path && m.path[0] == '/' ? strdup(m.path + 1) : NULL;
    uint64_t size = m.size;
    broker_meta_clear(&m);
    if (!rel)
        return kward_oom(c), -1;
    if (!dir) {
        bool dup = false;
        for (size_t i = 0; i < *n && !dup; i++)
            dup = !strcmp(v[i].rel, rel);
        if (!dup && *n < CTX_MAX_CANDIDATES && size <= kward_cap_file(c->ctx) && context_name_ok(rel))
            v[(*n)++].rel = rel;
        else
            free(rel);
        return 0;
    }
    free(rel);
    const char *ex[ARRAY_SIZE(ctx_skip) + 64];
    size_t n_ex = 0;
    for (size_t i = 0; i < ARRAY_SIZE(ctx_skip); i++)
        ex[n_ex++] = ctx_skip[i];
    for (size_t i = 0; i < c->ctx->limits.n_exclude && n_ex < ARRAY_SIZE(ex); i++)
        ex[n_ex++] = c->ctx->limits.exclude[i];
    struct broker_walk_opts o = {.recursive = true,
                                 .max_depth = 32,
                                 .exclude = ex,
                                 .n_exclude = n_ex,
                                 .want_meta = true,
                                 .max_entries = CTX_MAX_WALK};
    struct broker_list l;
    if (broker_explore(c->ctx, root, &o, &l, &c->e) < 0)
        return -1;
    for (size_t i = 0; i < l.n && *n < CTX_MAX_CANDIDATES; i++) {
        const struct broker_meta *e = &l.v[i];
        const char *r = e->path[0] == '/' ? e->path + 1 : e->path;
        if (e->is_dir || e->is_symlink || e->size > kward_cap_file(c->ctx) || !context_name_ok(r))
            continue;
        bool dup = false;
        for (size_t k = 0; k < *n && !dup; k++)
            dup = !strcmp(v[k].rel, r);
        if (dup)
            continue;
        if (!(v[*n].rel = strdup(r))) {
            broker_list_clear(&l);
            return kward_oom(c), -1;
        }
        (*n)++;
    }
    broker_list_clear(&l);
    return 0;
}

/* "### Matching excerpts": the first matching lines with two lines around each. */
static void excerpt(struct sbuf *out, const struct lines *l, const char *lower, const struct terms *t)
{
    size_t hits[CTX_MAX_MATCHES], nh = 0;
    for (size_t i = 0; i < l->n && nh < CTX_MAX_MATCHES; i++) {
        size_t a = l->start[i], len = kward_line_bytes(l, i);
        for (size_t k = 0; k < t->n; k++)
            if (memmem(lower + a, len, t->v[k], strlen(t->v[k]))) {
                hits[nh++] = i;
                break;
            }
    }
    if (!nh)
        return;
    kward_sb_str(out, "\n### Matching excerpts");
    size_t prev = (size_t)-1;
    for (size_t h = 0; h < nh; h++) {
        size_t from = hits[h] >= 2 ? hits[h] - 2 : 0;
        size_t to = hits[h] + 2 < l->n ? hits[h] + 2 : l->n - 1;
        if (prev != (size_t)-1 && from <= prev)
            from = prev + 1;
        for (size_t i = from; i <= to; i++) {
            if (prev != (size_t)-1 && i > prev + 1)
                kward_sb_str(out, "\n...");
            size_t len = kward_line_bytes(l, i);
            const char *s = l->s + l->start[i];
            while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
                len--;
            kward_sb_printf(out, "\n%4zu: ", i + 1);
            kward_sb_put(out, s, len);
            prev = i;
        }
    }
}

cJSON *kward_context_for_task(struct call *c)
{
    const char *task_in = kward_arg_str(c, CTX_TASK, "");
    while (isspace((unsigned char)*task_in))
        task_in++;
    size_t tl = strlen(task_in);
    while (tl && isspace((unsigned char)task_in[tl - 1]))
        tl--;
    if (!tl)
        return kward_fail(c, NULL, BROKER_E_INVALID, "task", "task is required");
    if (tl > MAX_TASK_BYTES)
        return kward_fail(c, NULL, BROKER_E_INVALID, "task", "task is longer than %d bytes",
                          MAX_TASK_BYTES);
    _cleanup_free_ char *task = strndup(task_in, tl);
    long long budget = CTX_DEFAULT_BUDGET;
    if (kward_arg_int(c, CTX_BUDGET, &budget) && budget < 1)
        return kward_fail(c, NULL, BROKER_E_INVALID, "budget", "budget must be positive");
    if (budget > CTX_MAX_BUDGET)
        budget = CTX_MAX_BUDGET;
    if (!task)
        return kward_oom(c);

    struct cand v[CTX_MAX_CANDIDATES];
    size_t n = 0;
    cJSON *res = NULL;
    struct sbuf out = {0};
    size_t raw = 0;
    const cJSON *paths = c->v[CTX_PATHS];
    bool any_path = false;
    for (const cJSON *it = paths ? paths->child : NULL; it; it = it->next) {
        if (!*it->valuestring)
            continue;
        any_path = true;
        if (gather(c, it->valuestring, v, &n) < 0)
            goto done;
    }
    if (!any_path && gather(c, ".", v, &n) < 0)
        goto done;
    struct terms t;
    terms_of(task, &t);
    /* Score every candidate: term occurrences in its path and text, +5 when a term is in the
     * path. Files that cannot be read as text are dropped. */
    size_t kept = 0, readable = 0;
    for (size_t i = 0; i < n; i++) {
        struct broker_read_result r;
        struct broker_read_opts o = {.max_bytes = kward_cap_file(c->ctx)};
        struct broker_err ignore;
        if (broker_read(c->ctx, v[i].rel, &o, &r, &ignore) < 0) {
            free(v[i].rel);
            continue;
        }
        if (r.truncated) {
            broker_read_result_clear(&r);
            free(v[i].rel);
            continue;
        }
        readable++;
        raw += r.len;
        _cleanup_free_ char *hay = util_printf("%s\n%s", v[i].rel, r.content);
        char *lh = hay ? lower_dup(hay, strlen(hay)) : NULL;
        long score = 0;
        bool in_path = false;
        for (size_t k = 0; lh && k < t.n; k++) {
            score += count_term(lh, strlen(lh), t.v[k]);
            in_path = in_path || memmem(lh, strlen(v[i].rel), t.v[k], strlen(t.v[k]));
        }
        free(lh);
        broker_read_result_clear(&r);
        v[i].score = score + (in_path ? 5 : 0);
        if (t.n && v[i].score <= 0) {
            free(v[i].rel);
            continue;
        }
        v[kept++] = v[i];
    }
    n = kept;
    c->raw_set = true;
    c->raw_bytes = raw;
    if (n == 0) {
        res = kward_result_new(c, readable ? "No matching candidate files found for focused context."
                                           : "No readable candidate files found for focused context.");
        goto done;
    }
    qsort(v, n, sizeof(v[0]), cand_cmp);
    size_t use = n < CTX_MAX_FILES ? n : CTX_MAX_FILES;

    kward_sb_str(&out, "# Focused context\n- Task: ");
    kward_sb_str(&out, task);
    kward_sb_printf(&out, "\n- Budget: %lld bytes\n- Search terms: ", budget);
    for (size_t k = 0; k < t.n; k++)
        kward_sb_printf(&out, "%s%s", k ? ", " : "", t.v[k]);
    if (!t.n)
        kward_sb_str(&out, "(none)");
    kward_sb_str(&out, "\n");
    size_t used = out.len;
    cJSON *files = cJSON_CreateArray();
    size_t sections = 0;
    for (size_t i = 0; i < use && files; i++) {
        struct broker_read_result r;
        struct broker_read_opts o = {.max_bytes = kward_cap_file(c->ctx)};
        struct broker_err ignore;
        if (broker_read(c->ctx, v[i].rel, &o, &r, &ignore) < 0)
            continue;
        struct sbuf sec = {0};
        struct lines l = {0};
        struct kward_outline ol = {0};
        char *lower = lower_dup(r.content, r.len);
        bool has = false;
        char *st = NULL;
        if (lower && kward_lines_split(&l, r.content, r.len) == 0)
            st = kward_structure_text(c, v[i].rel, r.content, r.len, l.n, &ol, &has);
        /* ctags missing or failing fails the call, as it does summarize_file_structure. */
        bool outline_failed = lower && l.start && !st;
        kward_sb_printf(&sec, "\n## %s\n- Score: %ld", v[i].rel, v[i].score);
        if (st && has) {
            kward_sb_str(&sec, "\n");
            kward_sb_str(&sec, st);
        }
        if (lower && l.start && t.n)
            excerpt(&sec, &l, lower, &t);
        kward_sb_str(&sec, "\n");
        free(st);
        free(lower);
        free(l.start);
        kward_outline_clear(&ol);
        broker_read_result_clear(&r);
        if (outline_failed) {
            free(sec.s);
            cJSON_Delete(files);
            goto done;
        }
        if (sec.oom) {
            free(sec.s);
            break;
        }
        bool stop = false;
        if (used + sec.len > (size_t)budget) {
            if (sections > 0) {
                stop = true;
            } else {
                size_t remaining = (size_t)budget > used ? (size_t)budget - used : 0;
                if (remaining < 200) {
                    stop = true;
                } else {
                    size_t keep = broker_utf8_cut(sec.s, sec.len, remaining);
                    sec.len = keep;
                    sec.s[keep] = '\0';
                    kward_sb_str(&sec, "\n[Context budget reached.]");
                }
            }
        }
        if (stop) {
            free(sec.s);
            break;
        }
        kward_sb_put(&out, sec.s, sec.len);
        used += sec.len;
        sections++;
        free(sec.s);
        cJSON *f = cJSON_CreateObject();
        if (!f || !cJSON_AddItemToArray(files, f) || !cJSON_AddStringToObject(f, "path", v[i].rel) ||
            !cJSON_AddNumberToObject(f, "score", (double)v[i].score)) {
            if (f && !f->prev)
                cJSON_Delete(f);
            cJSON_Delete(files);
            files = NULL;
        }
    }
    cJSON *terms = cJSON_CreateArray();
    for (size_t k = 0; terms && k < t.n; k++)
        cJSON_AddItemToArray(terms, cJSON_CreateString(t.v[k]));
    if (!files || !terms || out.oom || !(res = kward_result_new(c, out.s)) ||
        !cJSON_AddNumberToObject(res, "budget", (double)budget) ||
        !cJSON_AddItemToObject(res, "terms", terms) || !cJSON_AddItemToObject(res, "files", files)) {
        if (!res) {
            cJSON_Delete(files);
            cJSON_Delete(terms);
        }
        cJSON_Delete(res);
        res = kward_oom(c);
    }
done:
    for (size_t i = 0; i < n; i++)
        free(v[i].rel);
    free(out.s);
    return res;
}

/* ---- context_budget_stats ------------------------------------------------------------------- */

cJSON *kward_context_budget_stats(struct call *c)
{
    struct budget snap = {0};
    struct budget *b = tool_session_slot(c->ctx->session, kward_budget_make, kward_budget_drop);
    if (b) {
        tool_session_lock(c->ctx->session);
        snap = *b;
        tool_session_unlock(c->ctx->session);
    }
    uint64_t calls = 0, orig = 0, ret = 0;
    for (size_t i = 0; i < T_COUNT; i++) {
        calls += snap.calls[i];
        orig += snap.original[i];
        ret += snap.returned[i];
    }
    uint64_t saved = orig > ret ? orig - ret : 0;
    struct sbuf out = {0};
    kward_sb_printf(
        &out,
        "# Context budget stats\n- Calls: %ju\n- Original bytes: %ju\n- Returned bytes: %ju\n- "
        "Saved bytes: %ju\n- Estimated tokens saved: %ju",
        (uintmax_t)calls, (uintmax_t)orig, (uintmax_t)ret, (uintmax_t)saved,
        (uintmax_t)((saved + 3) / 4));
    /* Per tool, most saved first, then by name. */
    size_t order[T_COUNT], n = 0;
    for (size_t i = 0; i < T_COUNT; i++)
        if (snap.calls[i])
            order[n++] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t k = i; k > 0; k--) {
            size_t x = order[k - 1], y = order[k];
            uint64_t sx = snap.original[x] > snap.returned[x] ? snap.original[x] - snap.returned[x] : 0;
            uint64_t sy = snap.original[y] > snap.returned[y] ? snap.original[y] - snap.returned[y] : 0;
            if (sx > sy || (sx == sy && strcmp(c->table[x].spec.name, c->table[y].spec.name) < 0))
                break;
            order[k - 1] = y;
            order[k] = x;
        }
    cJSON *by = cJSON_CreateArray();
    if (n)
        kward_sb_str(&out, "\n\n## By tool");
    for (size_t j = 0; j < n && by; j++) {
        size_t i = order[j];
        uint64_t sv = snap.original[i] > snap.returned[i] ? snap.original[i] - snap.returned[i] : 0;
        kward_sb_printf(&out, "\n- %s: %ju call(s), %ju bytes saved, %ju/%ju bytes returned",
                        c->table[i].spec.name, (uintmax_t)snap.calls[i], (uintmax_t)sv,
                        (uintmax_t)snap.returned[i], (uintmax_t)snap.original[i]);
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(by, o) ||
            !cJSON_AddStringToObject(o, "tool", c->table[i].spec.name) ||
            !cJSON_AddNumberToObject(o, "calls", (double)snap.calls[i]) ||
            !cJSON_AddNumberToObject(o, "original_bytes", (double)snap.original[i]) ||
            !cJSON_AddNumberToObject(o, "returned_bytes", (double)snap.returned[i]) ||
            !cJSON_AddNumberToObject(o, "saved_bytes", (double)sv)) {
            if (o && !o->prev)
                cJSON_Delete(o);
            cJSON_Delete(by);
            by = NULL;
        }
    }
    cJSON *res = by && !out.oom ? kward_result_new(c, out.s) : NULL;
    free(out.s);
    if (!res || !cJSON_AddNumberToObject(res, "calls", (double)calls) ||
        !cJSON_AddNumberToObject(res, "original_bytes", (double)orig) ||
        !cJSON_AddNumberToObject(res, "returned_bytes", (double)ret) ||
        !cJSON_AddNumberToObject(res, "saved_bytes", (double)saved) ||
        !cJSON_AddNumberToObject(res, "estimated_tokens_saved", (double)((saved + 3) / 4)) ||
        !cJSON_AddItemToObject(res, "by_tool", by)) {
        if (!res)
            cJSON_Delete(by);
        cJSON_Delete(res);
        return kward_oom(c);
    }
    return res;
}
