/* tools/voltagent/search.c: the search toolkit of the VoltAgent surface (workspace_index,
 * workspace_index_content, workspace_search), with upstream's parameters, defaults, texts and
 * scores, over one bounded index per session (tools/voltagent/index.h). */
#include "tools/voltagent/voltagent.h"
#include "tools/voltagent/index.h"
#include "tools/voltagent/toolkit.h"

#include "tools/broker/glob.h"
#include "tools/session.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Upstream's defaults (src/workspace/search/index.ts). */
#define DEFAULT_TOP_K 5
#define DEFAULT_SNIPPET_LENGTH 240
#define DEFAULT_MAX_FILE_BYTES ((uint64_t)2 << 20)
#define DEFAULT_WEIGHT 0.5
/* corral's caps on one call: files walked by workspace_index, results and snippet sizes of a
 * search, the text of one indexed document's content in a result, all results' content. */
#define MAX_WALK 50000
#define MAX_TOP_K 100
#define MAX_SNIPPET 10000
#define MAX_RESULT_CONTENT 80000
#define MAX_PATH_LEN 4096
#define MAX_METADATA 16384

static const char INDEX_DESC[] = "Index workspace files under a path and optional glob for search.";
static const char INDEX_CONTENT_DESC[] = "Index raw content by path for search.";
static const char SEARCH_DESC[] =
    "Search indexed workspace files using BM25, vector, or hybrid search (scores normalized 0-1).";

static const struct voltagent_index_param index_params[] = {
    {"path", VS_STR, false, "Base path to index (default: /)"},
    {"glob", VS_STR, false, "Glob pattern to select files"},
    {"max_file_bytes", VS_INT, false, "Override maximum file size to index"},
};
static const struct voltagent_index_param content_params[] = {
    {"path", VS_STR, true, "Path identifier for the content"},
    {"content", VS_STR, true, "Raw content to index"},
    {"metadata", VS_OBJ_NULL, true, "Metadata object or null"},
};
enum { Q_QUERY, Q_MODE, Q_TOP_K, Q_PATH, Q_GLOB, Q_SNIPPET, Q_INCLUDE, Q_MIN, Q_LEX, Q_VEC };
static const struct voltagent_index_param search_params[] = {
    {"query", VS_STR, true, "Search query"},
    {"mode", VS_MODE, false, "Search mode"},
    {"top_k", VS_INT, false, "Number of results (default: 5)"},
    {"path", VS_STR, false, "Base path filter (default: /)"},
    {"glob", VS_STR, false, "Optional glob filter"},
    {"snippet_length", VS_INT, false, "Snippet length for each result"},
    {"include_content", VS_BOOL, false,
     "Include full content in results (default: true). Set false to prefer snippets."},
    {"min_score", VS_NUM, false, "Minimum normalized score (0-1)"},
    {"lexical_weight", VS_NUM, false,
     "Hybrid lexical weight (0-1). Defaults to 1 - vector_weight if omitted"},
    {"vector_weight", VS_NUM, false, "Hybrid vector weight (0-1). 0 = BM25 only, 1 = vector only"},
};

/* ---- helpers -------------------------------------------------------------------------------- */

static cJSON *fail(bool *is_error, const struct broker_err *e)
{
    *is_error = true;
    return voltagent_error(e);
}

__attribute__((format(printf, 3, 4))) static cJSON *fail_text(bool *is_error, const char *code,
                                                              const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    *is_error = true;
    return voltagent_error_text(code, buf);
}

static cJSON *no_session(bool *is_error)
{
    return fail_text(is_error, broker_kind_name(BROKER_E_IO),
                     "Error: Workspace search needs a session (or memory) to keep its index in");
}

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* A glob as upstream hands it to micromatch: leading slashes are not part of a relative match. */
static int compile_glob(const char *pattern, struct glob **g, struct broker_err *e)
{
    *g = NULL;
    while (*pattern == '/')
        pattern++;
    if (!*pattern || glob_new(pattern, g) < 0)
        return broker_fail(e, BROKER_E_PATTERN, "glob", "'%.200s' is not a valid glob pattern", pattern);
    return 0;
}

/* ---- workspace_index ------------------------------------------------------------------------ */

struct pending {
    struct voltagent_index_doc **v;
    size_t n, cap;
};

static void pending_clear(struct pending *p)
{
    for (size_t i = 0; i < p->n; i++)
        voltagent_index_doc_free(p->v[i]);
    free(p->v);
    memset(p, 0, sizeof(*p));
}

static int pending_push(struct pending *p, struct voltagent_index_doc *d)
{
    if (!d)
        return -ENOMEM;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct voltagent_index_doc **v = reallocarray(p->v, cap, sizeof(*v));
        if (!v) {
            voltagent_index_doc_free(d);
            return -ENOMEM;
        }
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = d;
    return 0;
}

/* Embeds every pending document (outside the session lock: an external command may take a
 * while) and adds them under the lock, all or none. *vector_indexed counts the vectors. */
static int commit_docs(struct tool_ctx *ctx, struct pending *p, size_t *vector_indexed,
                       struct broker_err *e)
{
    *vector_indexed = 0;
    const char **texts = calloc(p->n ? p->n : 1, sizeof(*texts));
    size_t *lens = calloc(p->n ? p->n : 1, sizeof(*lens));
    if (!texts || !lens) {
        free(texts);
        free(lens);
        return broker_fail(e, BROKER_E_IO, NULL, "out of memory");
    }
    for (size_t i = 0; i < p->n; i++) {
        texts[i] = p->v[i]->content;
        lens[i] = p->v[i]->len;
    }
    float *vecs = NULL;
    size_t dim = 0;
    int r = voltagent_index_embed(ctx, texts, lens, p->n, &vecs, &dim, e);
    free(texts);
    free(lens);
    if (r < 0)
        return -1;
    for (size_t i = 0; i < p->n && vecs; i++) {
        p->v[i]->vec = malloc(dim * sizeof(float));
        if (!p->v[i]->vec) {
            free(vecs);
            return broker_fail(e, BROKER_E_IO, NULL, "out of memory");
        }
        memcpy(p->v[i]->vec, vecs + i * dim, dim * sizeof(float));
        p->v[i]->dim = dim;
        p->v[i]->cost += dim * sizeof(float);
    }
    free(vecs);
    struct voltagent_state *st = voltagent_state(ctx);
    if (!st)
        return broker_fail(e, BROKER_E_IO, NULL,
                           "Workspace search needs a session to keep its index in");
    tool_session_lock(ctx->session);
    r = voltagent_index_add(st->search, p->v, p->n, e);
    tool_session_unlock(ctx->session);
    if (r < 0)
        return -1;
    *vector_indexed = dim ? p->n : 0;
    p->n = 0; /* taken by the index */
    return 0;
}

/* Upstream's formatIndexSummary, and the same facts as fields. */
static cJSON *index_summary(size_t indexed, size_t skipped, size_t vector_indexed, cJSON *errors)
{
    size_t cap = 256;
    for (const cJSON *it = errors ? errors->child : NULL; it; it = it->next)
        cap += strlen(it->valuestring) + 4;
    char *text = malloc(cap);
    cJSON *o = cJSON_CreateObject();
    if (!text || !o) {
        free(text);
        cJSON_Delete(o);
        cJSON_Delete(errors);
        return NULL;
    }
    size_t n = (size_t)snprintf(
        text, cap, "Indexed %zu file(s).\nSkipped %zu file(s).\nVector indexed %zu file(s).", indexed,
        skipped, vector_indexed);
    if (errors && errors->child) {
        n += (size_t)snprintf(text + n, cap - n, "\nErrors:");
        for (const cJSON *it = errors->child; it; it = it->next)
            n += (size_t)snprintf(text + n, cap - n, "\n- %s", it->valuestring);
    }
    bool ok = cJSON_AddStringToObject(o, "output", text) &&
              cJSON_AddNumberToObject(o, "indexed", (double)indexed) &&
              cJSON_AddNumberToObject(o, "skipped", (double)skipped) &&
              cJSON_AddNumberToObject(o, "vector_indexed", (double)vector_indexed) &&
              cJSON_AddItemToObject(o, "errors", errors);
    free(text);
    if (!ok) {
        if (!cJSON_GetObjectItemCaseSensitive(o, "errors"))
            cJSON_Delete(errors);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *t_index(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    const char *path = a->v[0] ? a->v[0]->valuestring : "/";
    const char *pattern = a->v[1] ? a->v[1]->valuestring : "**/*";
    if (!*path)
        path = "/";
    uint64_t max_file = a->v[2] ? (uint64_t)a->n[2] : DEFAULT_MAX_FILE_BYTES;
    /* 0 means no per-file cap upstream; corral still stops at what one index may hold. */
    if (max_file == 0 || max_file > VS_MAX_BYTES)
        max_file = VS_MAX_BYTES;
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0) {
        *is_error = true;
        return err;
    }
    if (!voltagent_state(ctx))
        return no_session(is_error);
    struct broker_err e = {0};
    struct glob *g;
    if (compile_glob(pattern, &g, &e) < 0)
        return fail(is_error, &e);
    const char *const *ex;
    size_t n_ex;
    broker_default_excludes(ctx, &ex, &n_ex);
    struct broker_walk_opts wo = {.recursive = true,
                                  .max_depth = 4096,
                                  .exclude = ex,
                                  .n_exclude = n_ex,
                                  .want_meta = true,
                                  .max_entries = MAX_WALK};
    struct broker_list l;
    _cleanup_free_ char *base = NULL;
    if (broker_path_clean(path, "path", &base, &e) < 0 || broker_explore(ctx, path, &wo, &l, &e) < 0) {
        glob_free(g);
        return fail(is_error, &e);
    }
    size_t skip = *base ? strlen(base) + 2 : 1; /* "/" + base + "/" */
    cJSON *errors = cJSON_CreateArray();
    struct pending p = {0};
    size_t skipped = 0, held = 0;
    bool stopped = false; /* reading stopped: the batch alone passes a cap */
    int rc = errors ? 0 : -ENOMEM;
    if (l.truncated) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "Only the first %d entries under %s were walked; index a narrower path", MAX_WALK,
                 path);
        cJSON_AddItemToArray(errors, cJSON_CreateString(msg));
    }
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        const struct broker_meta *m = &l.v[i];
        if (m->is_dir || m->is_symlink || strlen(m->path) < skip || !glob_matches(g, m->path + skip))
            continue;
        if (m->size > max_file) {
            skipped++;
            continue;
        }
        struct broker_read_opts ro = {.max_bytes = max_file};
        struct broker_read_result rr;
        struct broker_err re = {0};
        if (broker_read(ctx, m->path, &ro, &rr, &re) < 0) {
            if (re.kind == BROKER_E_BINARY || re.kind == BROKER_E_TOO_LARGE) {
                skipped++; /* not text, or grew past the cap since the walk */
                continue;
            }
            char msg[700];
            snprintf(msg, sizeof(msg), "Failed to read %s: %s", m->path, re.msg);
            cJSON_AddItemToArray(errors, cJSON_CreateString(msg));
            continue;
        }
        if (rr.truncated) {
            skipped++;
            broker_read_result_clear(&rr);
            continue;
        }
        /* Stop reading as soon as the batch alone could not fit: the index's own check
         * below gives the message. */
        held += rr.len;
        cJSON *meta = cJSON_CreateObject();
        char when[32];
        broker_iso_time(&rr.meta.mtime, when);
        if (meta) {
            cJSON_AddNumberToObject(meta, "size", (double)rr.meta.size);
            cJSON_AddStringToObject(meta, "modified_at", when);
        }
        char *content = steal_pointer(&rr.content);
        size_t len = rr.len;
        broker_read_result_clear(&rr);
        rc = pending_push(&p, voltagent_index_doc_new(m->path, content, len, meta, NULL, NULL, 0));
        if (rc == 0 && (held > VS_MAX_BYTES || p.n > VS_MAX_DOCS)) {
            stopped = true;
            break;
        }
    }
    glob_free(g);
    broker_list_clear(&l);
    if (rc < 0) {
        pending_clear(&p);
        cJSON_Delete(errors);
        return NULL;
    }
    size_t vector_indexed = 0, indexed = p.n;
    struct voltagent_state *st = voltagent_state(ctx);
    int fits;
    if (stopped) {
        fits = broker_fail(&e, BROKER_E_TOO_LARGE, NULL,
                           "more than %d files or %zu MiB match under %.200s; the search index of "
                           "this session holds at most that. Index a narrower path or glob",
                           VS_MAX_DOCS, VS_MAX_BYTES >> 20, path);
    } else {
        tool_session_lock(ctx->session);
        fits = voltagent_index_fits(st->search, p.v, p.n, &e);
        tool_session_unlock(ctx->session);
    }
    if (fits < 0 || commit_docs(ctx, &p, &vector_indexed, &e) < 0) {
        pending_clear(&p);
        cJSON_Delete(errors);
        return fail(is_error, &e);
    }
    pending_clear(&p);
    return index_summary(indexed, skipped, vector_indexed, errors);
}

/* ---- workspace_index_content ---------------------------------------------------------------- */

static cJSON *t_index_content(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    /* Upstream's normalizeDocumentPath: trimmed, "/" in front. The path names the content only
     * (nothing is read or written there), but it follows the surface's path rule all the same. */
    const char *raw = a->v[0]->valuestring;
    while (*raw == ' ' || (*raw >= '\t' && *raw <= '\r'))
        raw++;
    size_t n = strlen(raw);
    while (n && (raw[n - 1] == ' ' || (raw[n - 1] >= '\t' && raw[n - 1] <= '\r')))
        n--;
    if (n > MAX_PATH_LEN)
        return fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                         "Error: path is longer than %d bytes", MAX_PATH_LEN);
    char path[MAX_PATH_LEN + 2];
    snprintf(path, sizeof(path), "%s%.*s", raw[0] == '/' || !n ? "" : "/", (int)n, raw);
    if (!n)
        strcpy(path, "/");
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0) {
        *is_error = true;
        return err;
    }
    if (!voltagent_state(ctx))
        return no_session(is_error);
    const char *content = a->v[1]->valuestring;
    size_t len = strlen(content);
    if (len > VS_MAX_BYTES)
        return fail_text(
            is_error, broker_kind_name(BROKER_E_TOO_LARGE),
            "Error: content is %zu bytes; the search index of this session holds at most %zu MiB", len,
            VS_MAX_BYTES >> 20);
    cJSON *meta = NULL;
    if (cJSON_IsObject(a->v[2])) {
        _cleanup_free_ char *s = cJSON_PrintUnformatted(a->v[2]);
        if (s && strlen(s) > MAX_METADATA)
            return fail_text(is_error, broker_kind_name(BROKER_E_TOO_LARGE),
                             "Error: metadata is larger than %d bytes as JSON", MAX_METADATA);
        meta = cJSON_Duplicate(a->v[2], true);
        if (!meta)
            return NULL;
    }
    char *copy = strdup(content);
    if (!copy) {
        cJSON_Delete(meta);
        return NULL;
    }
    struct pending p = {0};
    if (pending_push(&p, voltagent_index_doc_new(path, copy, len, meta, NULL, NULL, 0)) < 0) {
        pending_clear(&p);
        return NULL;
    }
    struct broker_err e = {0};
    size_t vector_indexed = 0;
    if (commit_docs(ctx, &p, &vector_indexed, &e) < 0) {
        pending_clear(&p);
        return fail(is_error, &e);
    }
    pending_clear(&p);
    return index_summary(1, 0, vector_indexed, cJSON_CreateArray());
}

/* ---- workspace_search ----------------------------------------------------------------------- */

struct path_filter {
    const char *base; /* "/src" or "" for the root */
    size_t base_len;
    const struct glob *glob;
};

/* Upstream's matchesPathFilter, with the base compared by whole segments (upstream's plain
 * startsWith lets "/src" match "/srcold/a.ts"). */
static bool keep_doc(const struct voltagent_index_doc *d, void *arg)
{
    const struct path_filter *f = arg;
    const char *p = d->id;
    if (f->base_len) {
        if (strncmp(p, f->base, f->base_len) || (p[f->base_len] && p[f->base_len] != '/'))
            return false;
        p += f->base_len;
    }
    while (*p == '/')
        p++;
    return !f->glob || glob_matches(f->glob, p);
}

struct merged {
    size_t doc;
    double score;
    double bm25_raw, bm25_norm, vec;
    bool has_bm25, has_vec;
};

static int merged_cmp(const void *a, const void *b)
{
    const struct merged *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? 1 : -1;
    return 0;
}

static struct merged *find_merged(struct merged *m, size_t n, size_t doc)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].doc == doc)
            return &m[i];
    return NULL;
}

static cJSON *result_json(const struct voltagent_index_doc *d, const struct merged *m, const char *mode,
                          const char *query, size_t snippet_len, bool include_content,
                          size_t content_cap)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", d->id);
    cJSON_AddStringToObject(o, "path", d->id);
    cJSON_AddNumberToObject(o, "score", clamp01(m->score));
    size_t cut = include_content ? broker_utf8_cut(d->content, d->len, content_cap) : 0;
    char *content = strndup(d->content, cut);
    if (content) {
        cJSON_AddStringToObject(o, "content", content);
        free(content);
    }
    if (cut < d->len && include_content)
        cJSON_AddBoolToObject(o, "content_truncated", true);
    uint64_t ls, le;
    if (voltagent_index_line_range(d->content, d->len, query, &ls, &le)) {
        cJSON *lr = cJSON_AddObjectToObject(o, "lineRange");
        cJSON_AddNumberToObject(lr, "start", (double)ls);
        cJSON_AddNumberToObject(lr, "end", (double)le);
    }
    bool want_bm25 = strcmp(mode, "vector") != 0, want_vec = strcmp(mode, "bm25") != 0;
    cJSON *sd = cJSON_AddObjectToObject(o, "scoreDetails");
    if (want_bm25)
        cJSON_AddNumberToObject(sd, "bm25", m->has_bm25 ? m->bm25_norm : 0);
    if (want_vec)
        cJSON_AddNumberToObject(sd, "vector", m->has_vec ? clamp01(m->vec) : 0);
    if (m->has_bm25)
        cJSON_AddNumberToObject(o, "bm25Score", m->bm25_raw);
    if (m->has_vec)
        cJSON_AddNumberToObject(o, "vectorScore", m->vec);
    if (d->len) {
        char *snip = voltagent_index_snippet(d->content, d->len, query, snippet_len);
        if (snip) {
            cJSON_AddStringToObject(o, "snippet", snip);
            free(snip);
        }
    }
    if (d->metadata)
        cJSON_AddItemToObject(o, "metadata", cJSON_Duplicate(d->metadata, true));
    return o;
}

static cJSON *t_search(struct tool_ctx *ctx, const struct voltagent_index_args *a, bool *is_error)
{
    const char *query = a->v[Q_QUERY]->valuestring;
    /* Upstream's default mode is hybrid when an embedding is configured; corral always has one
     * (the local embedding at least). */
    const char *mode = a->v[Q_MODE] ? a->v[Q_MODE]->valuestring : "hybrid";
    size_t top_k = a->v[Q_TOP_K] ? (size_t)fmin(a->n[Q_TOP_K], MAX_TOP_K) : DEFAULT_TOP_K;
    size_t snippet_len = a->v[Q_SNIPPET] ? (size_t)fmin(a->n[Q_SNIPPET], MAX_SNIPPET)
                                         : DEFAULT_SNIPPET_LENGTH;
    bool include_content = a->v[Q_INCLUDE] ? cJSON_IsTrue(a->v[Q_INCLUDE]) : true;
    double min_score = clamp01(a->v[Q_MIN] ? a->n[Q_MIN] : 0);
    double lw, vw;
    if (!a->v[Q_LEX] && !a->v[Q_VEC]) {
        lw = DEFAULT_WEIGHT;
        vw = DEFAULT_WEIGHT;
    } else if (!a->v[Q_LEX]) {
        vw = a->n[Q_VEC];
        lw = 1 - vw;
    } else if (!a->v[Q_VEC]) {
        lw = a->n[Q_LEX];
        vw = 1 - lw;
    } else {
        lw = a->n[Q_LEX];
        vw = a->n[Q_VEC];
    }
    lw = clamp01(lw);
    vw = clamp01(vw);
    if (strlen(query) > 65536)
        return fail_text(is_error, broker_kind_name(BROKER_E_INVALID),
                         "Error: query is longer than 65536 bytes");
    const char *path = a->v[Q_PATH] && *a->v[Q_PATH]->valuestring ? a->v[Q_PATH]->valuestring : "/";
    cJSON *err;
    if (voltagent_path_check(path, "path", &err) < 0) {
        *is_error = true;
        return err;
    }
    struct broker_err e = {0};
    _cleanup_free_ char *base = NULL;
    if (broker_path_clean(path, "path", &base, &e) < 0)
        return fail(is_error, &e);
    struct glob *g = NULL;
    if (a->v[Q_GLOB] && compile_glob(a->v[Q_GLOB]->valuestring, &g, &e) < 0)
        return fail(is_error, &e);
    struct voltagent_state *st = voltagent_state(ctx);
    if (!st) {
        glob_free(g);
        return no_session(is_error);
    }
    bool want_bm25 = strcmp(mode, "vector") != 0, want_vec = strcmp(mode, "bm25") != 0;
    float *qvec = NULL;
    size_t dim = 0;
    bool qvec_any = false;
    if (want_vec) {
        size_t qlen = strlen(query);
        if (voltagent_index_embed(ctx, &query, &qlen, 1, &qvec, &dim, &e) < 0) {
            glob_free(g);
            return fail(is_error, &e);
        }
        for (size_t i = 0; i < dim && !qvec_any; i++)
            qvec_any = qvec[i] != 0;
    }
    char display_base[MAX_PATH_LEN + 2];
    snprintf(display_base, sizeof(display_base), "%s%s", *base ? "/" : "", base);
    struct path_filter pf = {.base = display_base, .base_len = strlen(display_base), .glob = g};
    struct voltagent_index_scored *bm = NULL, *vec = NULL;
    size_t n_bm = 0, n_vec = 0;
    size_t limit = top_k * 5;
    cJSON *res = NULL, *results = NULL;
    struct merged *m = NULL;
    tool_session_lock(ctx->session);
    int r = 0;
    if (want_bm25)
        r = voltagent_index_bm25(st->search, query, keep_doc, &pf, limit, &bm, &n_bm);
    /* A query without any feature (only punctuation) matches nothing, rather than every
     * document at the neutral 0.5 of a zero vector. */
    if (r == 0 && want_vec && qvec_any && dim == voltagent_index_dim(st->search))
        r = voltagent_index_vector(st->search, qvec, dim, keep_doc, &pf, limit, &vec, &n_vec);
    m = calloc(n_bm + n_vec + 1, sizeof(*m));
    if (r < 0 || !m)
        goto out;
    double max_bm = 0;
    for (size_t i = 0; i < n_bm; i++)
        max_bm = fmax(max_bm, bm[i].score);
    size_t nm = 0;
    for (size_t i = 0; i < n_bm; i++)
        m[nm++] = (struct merged){.doc = bm[i].doc,
                                  .bm25_raw = bm[i].score,
                                  .bm25_norm = max_bm > 0 ? clamp01(bm[i].score / max_bm) : 0,
                                  .has_bm25 = true};
    for (size_t i = 0; i < n_vec; i++) {
        struct merged *x = find_merged(m, nm, vec[i].doc);
        if (!x) {
            x = &m[nm++];
            *x = (struct merged){.doc = vec[i].doc};
        }
        x->vec = vec[i].score;
        x->has_vec = true;
    }
    for (size_t i = 0; i < nm; i++) {
        if (!strcmp(mode, "bm25"))
            m[i].score = m[i].bm25_norm;
        else if (!strcmp(mode, "vector"))
            m[i].score = clamp01(m[i].vec);
        else
            m[i].score = lw + vw > 0 ? (lw * m[i].bm25_norm + vw * clamp01(m[i].vec)) / (lw + vw) : 0;
    }
    /* Each list came best first; the merge is sorted again only in hybrid mode, as upstream. */
    if (!strcmp(mode, "hybrid") && nm)
        qsort(m, nm, sizeof(*m), merged_cmp);
    res = cJSON_CreateObject();
    results = cJSON_AddArrayToObject(res, "results");
    if (!results)
        goto out;
    size_t shown = 0;
    for (size_t i = 0; i < nm && shown < top_k; i++)
        shown += !(min_score > 0 && m[i].score < min_score);
    size_t cap = shown ? MAX_RESULT_CONTENT / shown : MAX_RESULT_CONTENT;
    for (size_t i = 0, k = 0; i < nm && k < top_k; i++) {
        if (min_score > 0 && m[i].score < min_score)
            continue;
        k++;
        cJSON *o = result_json(voltagent_index_doc(st->search, m[i].doc), &m[i], mode, query,
                               snippet_len, include_content, cap);
        if (!o || !cJSON_AddItemToArray(results, o)) {
            cJSON_Delete(o);
            cJSON_Delete(res);
            res = NULL;
            goto out;
        }
    }
    cJSON_AddNumberToObject(res, "total", (double)cJSON_GetArraySize(results));
    cJSON_AddStringToObject(res, "mode", mode);
out:
    tool_session_unlock(ctx->session);
    free(m);
    free(bm);
    free(vec);
    free(qvec);
    glob_free(g);
    return res;
}

/* ---- the toolkit ---------------------------------------------------------------------------- */

static const struct voltagent_toolkit_tool tools[] = {
    {"workspace_index", INDEX_DESC, index_params, ARRAY_SIZE(index_params), t_index},
    {"workspace_index_content", INDEX_CONTENT_DESC, content_params, ARRAY_SIZE(content_params),
     t_index_content},
    {"workspace_search", SEARCH_DESC, search_params, ARRAY_SIZE(search_params), t_search},
};
static const struct voltagent_toolkit toolkit = {tools, ARRAY_SIZE(tools), false};

int voltagent_search_list(const struct tool_ctx *ctx, cJSON *arr)
{
    (void)ctx;
    return voltagent_toolkit_list(&toolkit, arr);
}

int voltagent_search_call(struct tool_ctx *ctx, const char *tool, const cJSON *args, cJSON **result,
                          bool *is_error)
{
    return voltagent_toolkit_call(&toolkit, ctx, tool, args, result, is_error);
}
