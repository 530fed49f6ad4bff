/* tests/unit/test_voltagent_search.c: the VoltAgent search toolkit through the surface's own
 * call, on a small corpus with known answers for each of bm25 / vector / hybrid; upstream's BM25
 * formula checked by hand; the local embedding; filters, limits, the index caps and errors. */
#include "wap_fixture.h"

#include "tools/session.h"
#include "tools/voltagent/voltagent.h"
#include "tools/voltagent/index.h"

#include <math.h>

static int v_setup(void **state)
{
    if (fx_setup(state) < 0)
        return -1;
    struct fx *f = *state;
    f->s = tool_surface_find("voltagent");
    return f->s && tool_session_new(&f->ctx.session) == 0 ? 0 : -1;
}

static int v_teardown(void **state)
{
    struct fx *f = *state;
    tool_session_free(f->ctx.session);
    return fx_teardown(state);
}

#define VT(fn) cmocka_unit_test_setup_teardown(fn, v_setup, v_teardown)

static void expect_err(struct fx *f, const char *tool, const char *args, const char *code,
                       const char *needle)
{
    bool err;
    cJSON *r = fx_call(f, tool, args, &err);
    char *t = cJSON_PrintUnformatted(r);
    const cJSON *c = cJSON_GetObjectItem(r, "code"), *m = cJSON_GetObjectItem(r, "error");
    if (!err || !cJSON_IsString(c) || strcmp(c->valuestring, code) || !cJSON_IsString(m) ||
        (needle && !strstr(m->valuestring, needle))) {
        print_error("%s(%s): want %s [%s], got %s\n", tool, args, code, needle ? needle : "", t);
        free(t);
        fail();
    }
    free(t);
    cJSON_Delete(r);
}

static void add(struct fx *f, const char *path, const char *content)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "path", path);
    cJSON_AddStringToObject(a, "content", content);
    cJSON_AddNullToObject(a, "metadata");
    char *s = cJSON_PrintUnformatted(a);
    cJSON *r = fx_ok(f, "workspace_index_content", s);
    assert_string_equal(fx_str(r, "output"),
                        "Indexed 1 file(s).\nSkipped 0 file(s).\nVector indexed 1 file(s).");
    cJSON_Delete(r);
    free(s);
    cJSON_Delete(a);
}

/* The corpus: each query below has one right answer a person would give. */
static void corpus(struct fx *f)
{
    add(f, "/docs/cats.md",
        "Cats are small carnivorous mammals.\nThe domestic cat purrs and hunts mice.");
    add(f, "/docs/dogs.md",
        "Dogs are loyal companions.\nA dog barks, fetches sticks and guards the house.");
    add(f, "/docs/rust.md",
        "Rust is a systems programming language\nfocused on memory safety and ownership.");
    add(f, "/docs/python.md",
        "Python is a dynamic programming language\npopular for scripting and data science.");
    add(f, "/src/index.ts",
        "export function buildIndex(files) {\n  // indexing the files for search\n}\n");
}

static cJSON *search(struct fx *f, const char *args)
{
    return fx_ok(f, "workspace_search", args);
}

static const cJSON *result(const cJSON *r, int i)
{
    const cJSON *arr = cJSON_GetObjectItem(r, "results");
    assert_true(cJSON_IsArray(arr));
    assert_true(cJSON_GetArraySize(arr) > i);
    return cJSON_GetArrayItem(arr, i);
}

static void expect_top(struct fx *f, const char *args, const char *want)
{
    cJSON *r = search(f, args);
    const char *got = fx_str(result(r, 0), "path");
    if (strcmp(got, want)) {
        char *t = cJSON_PrintUnformatted(r);
        print_error("search %s: want %s first, got %s\n", args, want, t);
        free(t);
        fail();
    }
    cJSON_Delete(r);
}

/* ---- ranking -------------------------------------------------------------------------------- */

static void bm25_ranks_known_answers(void **state)
{
    struct fx *f = *state;
    corpus(f);
    expect_top(f, "{\"query\":\"memory safety\",\"mode\":\"bm25\"}", "/docs/rust.md");
    expect_top(f, "{\"query\":\"dynamic programming language\",\"mode\":\"bm25\"}", "/docs/python.md");
    expect_top(f, "{\"query\":\"dog\",\"mode\":\"bm25\"}", "/docs/dogs.md");
    /* "language" is in two documents, both found, nothing else. */
    cJSON *r = search(f, "{\"query\":\"language\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 2);
    assert_string_equal(fx_str(r, "mode"), "bm25");
    /* BM25 mode: scores normalised by the best, which scores 1. */
    assert_true(fabs(fx_num(result(r, 0), "score") - 1.0) < 1e-9);
    cJSON_Delete(r);
    /* A word in no document: no result (upstream's "No results found." case). */
    r = search(f, "{\"query\":\"submarine\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 0);
    cJSON_Delete(r);
}

/* Upstream's formula by hand: k1 1.5, b 0.75, idf ln(1 + (N - df + 0.5) / (df + 0.5)). */
static void bm25_score_is_upstreams_formula(void **state)
{
    struct fx *f = *state;
    add(f, "/a", "apple apple pear"); /* 3 tokens, tf(apple) 2 */
    add(f, "/b", "pear plum");        /* 2 tokens */
    add(f, "/c", "apple");            /* 1 token, tf 1 */
    double n = 3, df = 2, avg = 6.0 / 3.0, k1 = 1.5, b = 0.75;
    double idf = log(1 + (n - df + 0.5) / (df + 0.5));
    double sa = idf * (2 * (k1 + 1)) / (2 + k1 * (1 - b + b * 3 / avg));
    double sc = idf * (1 * (k1 + 1)) / (1 + k1 * (1 - b + b * 1 / avg));
    cJSON *r = search(f, "{\"query\":\"Apple\",\"mode\":\"bm25\"}");
    const char *first = fx_str(result(r, 0), "path");
    double s0 = fx_num(result(r, 0), "bm25Score"), s1 = fx_num(result(r, 1), "bm25Score");
    if (sa > sc) {
        assert_string_equal(first, "/a");
        assert_true(fabs(s0 - sa) < 1e-9 && fabs(s1 - sc) < 1e-9);
    } else {
        assert_string_equal(first, "/c");
        assert_true(fabs(s0 - sc) < 1e-9 && fabs(s1 - sa) < 1e-9);
    }
    const cJSON *sd = fx_item(result(r, 1), "scoreDetails");
    assert_true(fabs(fx_num(sd, "bm25") - fmin(sa, sc) / fmax(sa, sc)) < 1e-9);
    assert_int_equal(fx_num(r, "total"), 2);
    cJSON_Delete(r);
}

static void vector_ranks_known_answers(void **state)
{
    struct fx *f = *state;
    corpus(f);
    /* No document holds the word "indexes": BM25 finds nothing, the trigrams of the local
     * embedding find the file about indexing. */
    cJSON *r = search(f, "{\"query\":\"indexes\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 0);
    cJSON_Delete(r);
    expect_top(f, "{\"query\":\"indexes\",\"mode\":\"vector\"}", "/src/index.ts");
    expect_top(f, "{\"query\":\"barking doggies\",\"mode\":\"vector\"}", "/docs/dogs.md");
    expect_top(f, "{\"query\":\"carnivorous\",\"mode\":\"vector\"}", "/docs/cats.md");
    /* Upstream's vector store score: (cosine + 1) / 2, in [0, 1], best first. */
    r = search(f, "{\"query\":\"ownership systems\",\"mode\":\"vector\",\"top_k\":5}");
    assert_string_equal(fx_str(result(r, 0), "path"), "/docs/rust.md");
    double prev = 2;
    for (int i = 0; i < (int)fx_num(r, "total"); i++) {
        double s = fx_num(result(r, i), "score");
        assert_true(s >= 0 && s <= 1 && s <= prev);
        assert_true(fabs(s - fx_num(result(r, i), "vectorScore")) < 1e-9);
        prev = s;
    }
    cJSON_Delete(r);
}

static void hybrid_ranks_known_answers(void **state)
{
    struct fx *f = *state;
    corpus(f);
    /* "cat" is a BM25 hit, "purring" only near "purrs" by trigrams: both point at cats.md. */
    expect_top(f, "{\"query\":\"cat purring\"}", "/docs/cats.md");
    expect_top(f, "{\"query\":\"memory safe language\",\"mode\":\"hybrid\"}", "/docs/rust.md");
    /* The hybrid score is (lw * bm25_norm + vw * vector) / (lw + vw), as upstream. */
    cJSON *r = search(f,
                      "{\"query\":\"scripting language\",\"mode\":\"hybrid\",\"lexical_weight\":0.3}");
    const cJSON *top = result(r, 0);
    assert_string_equal(fx_str(top, "path"), "/docs/python.md");
    const cJSON *sd = fx_item(top, "scoreDetails");
    double want = (0.3 * fx_num(sd, "bm25") + 0.7 * fx_num(sd, "vector")) / 1.0;
    assert_true(fabs(fx_num(top, "score") - want) < 1e-9);
    cJSON_Delete(r);
    /* vector_weight 0: BM25 alone decides; lexical_weight 0: the vector alone. */
    r = search(f, "{\"query\":\"indexes dog\",\"vector_weight\":0}");
    assert_string_equal(fx_str(result(r, 0), "path"), "/docs/dogs.md");
    cJSON_Delete(r);
}

/* ---- results, filters, limits --------------------------------------------------------------- */

static void result_shape_as_upstream(void **state)
{
    struct fx *f = *state;
    corpus(f);
    cJSON *r = search(f, "{\"query\":\"barks\",\"mode\":\"bm25\"}");
    const cJSON *x = result(r, 0);
    assert_string_equal(fx_str(x, "id"), "/docs/dogs.md");
    assert_string_equal(fx_str(x, "content"),
                        "Dogs are loyal companions.\nA dog barks, fetches sticks and guards the house.");
    /* lineRange: first and last line with a query token */
    assert_int_equal(fx_num(fx_item(x, "lineRange"), "start"), 2);
    assert_int_equal(fx_num(fx_item(x, "lineRange"), "end"), 2);
    /* snippet: whitespace collapsed */
    assert_string_equal(fx_str(x, "snippet"),
                        "Dogs are loyal companions. A dog barks, fetches sticks and guards the house.");
    assert_non_null(cJSON_GetObjectItem(x, "bm25Score"));
    assert_null(cJSON_GetObjectItem(x, "vectorScore"));
    cJSON_Delete(r);
    /* include_content false: content "", snippets kept; snippet_length centres on the match */
    r = search(
        f, "{\"query\":\"sticks\",\"mode\":\"bm25\",\"include_content\":false,\"snippet_length\":20}");
    x = result(r, 0);
    assert_string_equal(fx_str(x, "content"), "");
    const char *sn = fx_str(x, "snippet");
    assert_true(strlen(sn) <= 20 && strstr(sn, "stick"));
    cJSON_Delete(r);
    /* metadata given with index_content comes back */
    cJSON_Delete(
        fx_ok(f, "workspace_index_content",
              "{\"path\":\"notes/m.txt\",\"content\":\"zebra stripes\",\"metadata\":{\"k\":\"v\"}}"));
    r = search(f, "{\"query\":\"zebra\",\"mode\":\"bm25\"}");
    assert_string_equal(fx_str(result(r, 0), "path"), "/notes/m.txt");
    assert_string_equal(fx_str(fx_item(result(r, 0), "metadata"), "k"), "v");
    cJSON_Delete(r);
}

static void filters_and_limits(void **state)
{
    struct fx *f = *state;
    corpus(f);
    /* path: whole segments ("/doc" is not "/docs") */
    cJSON *r = search(f, "{\"query\":\"language\",\"mode\":\"bm25\",\"path\":\"/doc\"}");
    assert_int_equal(fx_num(r, "total"), 0);
    cJSON_Delete(r);
    r = search(f, "{\"query\":\"files language\",\"mode\":\"bm25\",\"path\":\"/src\"}");
    assert_int_equal(fx_num(r, "total"), 1);
    assert_string_equal(fx_str(result(r, 0), "path"), "/src/index.ts");
    cJSON_Delete(r);
    /* glob relative to path */
    r = search(f, "{\"query\":\"language files\",\"mode\":\"bm25\",\"glob\":\"**/*.ts\"}");
    assert_int_equal(fx_num(r, "total"), 1);
    cJSON_Delete(r);
    r = search(f, "{\"query\":\"language\",\"mode\":\"bm25\",\"path\":\"/docs\",\"glob\":\"p*.md\"}");
    assert_int_equal(fx_num(r, "total"), 1);
    assert_string_equal(fx_str(result(r, 0), "path"), "/docs/python.md");
    cJSON_Delete(r);
    /* top_k, min_score */
    r = search(f, "{\"query\":\"the\",\"mode\":\"vector\",\"top_k\":2}");
    assert_int_equal(fx_num(r, "total"), 2);
    cJSON_Delete(r);
    r = search(f, "{\"query\":\"language memory\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 2);
    cJSON_Delete(r);
    r = search(f, "{\"query\":\"language memory\",\"mode\":\"bm25\",\"min_score\":0.999999}");
    assert_int_equal(fx_num(r, "total"), 1);
    assert_string_equal(fx_str(result(r, 0), "path"), "/docs/rust.md");
    cJSON_Delete(r);
    /* re-indexing a path replaces it */
    add(f, "/docs/rust.md", "nothing about that any more");
    r = search(f, "{\"query\":\"ownership\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 0);
    cJSON_Delete(r);
}

static void workspace_index_walks_files(void **state)
{
    struct fx *f = *state;
    fx_put(f, "src/a.ts", "export const alpha = 'search engine';\n");
    fx_put(f, "src/deep/b.ts", "export const beta = 'ranking';\n");
    fx_put(f, "src/c.md", "gamma notes about the search engine\n");
    fx_put(f, "other/d.ts", "delta\n");
    fx_put_bytes(f, "src/bin.ts", "a\0b", 3);
    char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    fx_put(f, "src/big.ts", big);
    cJSON *r = fx_ok(f, "workspace_index",
                     "{\"path\":\"/src\",\"glob\":\"**/*.ts\",\"max_file_bytes\":2000}");
    /* a.ts and deep/b.ts; bin.ts (binary) and big.ts (over max_file_bytes) skipped */
    assert_string_equal(fx_str(r, "output"),
                        "Indexed 2 file(s).\nSkipped 2 file(s).\nVector indexed 2 file(s).");
    assert_int_equal(fx_num(r, "indexed"), 2);
    cJSON_Delete(r);
    r = search(f, "{\"query\":\"search engine\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 1);
    assert_string_equal(fx_str(result(r, 0), "path"), "/src/a.ts");
    const cJSON *meta = fx_item(result(r, 0), "metadata");
    assert_int_equal(fx_num(meta, "size"), 38);
    assert_non_null(strstr(fx_str(meta, "modified_at"), "Z"));
    cJSON_Delete(r);
    /* defaults: "/" and every file */
    r = fx_ok(f, "workspace_index", NULL);
    assert_int_equal(fx_num(r, "indexed"), 5);
    cJSON_Delete(r);
    r = search(f, "{\"query\":\"gamma\"}");
    assert_string_equal(fx_str(result(r, 0), "path"), "/src/c.md");
    cJSON_Delete(r);
}

/* ---- errors --------------------------------------------------------------------------------- */

static void errors(void **state)
{
    struct fx *f = *state;
    expect_err(f, "workspace_search", "{}", "invalid_argument", "query is required");
    expect_err(f, "workspace_search", "{\"query\":\"x\",\"mode\":\"fuzzy\"}", "invalid_argument",
               "mode must be one of");
    expect_err(f, "workspace_search", "{\"query\":\"x\",\"topk\":3}", "invalid_argument",
               "no argument \"topk\"");
    expect_err(f, "workspace_search", "{\"query\":\"x\",\"top_k\":-1}", "invalid_argument", "top_k");
    expect_err(f, "workspace_search", "{\"query\":\"x\",\"top_k\":\"ten\"}", "invalid_argument",
               "top_k must be a number");
    expect_err(f, "workspace_search", "{\"query\":\"x\",\"path\":\"/../etc\"}", VOLTAGENT_E_TRAVERSAL,
               NULL);
    expect_err(f, "workspace_search", "{\"query\":\"x\",\"path\":\"~/x\"}", VOLTAGENT_E_TRAVERSAL, NULL);
    expect_err(f, "workspace_search", "{\"query\":\"x\",\"glob\":\"[a\"}", "invalid_pattern",
               "not a valid glob");
    expect_err(f, "workspace_index", "{\"path\":\"src\"}", "invalid_argument", "starting with '/'");
    expect_err(f, "workspace_index", "{\"path\":\"/nope\"}", "not_found", NULL);
    expect_err(f, "workspace_index", "{\"path\":\"/..\"}", VOLTAGENT_E_TRAVERSAL, NULL);
    expect_err(f, "workspace_index", "{\"max_file_bytes\":1.5}", "invalid_argument", "whole number");
    expect_err(f, "workspace_index_content", "{\"path\":\"/x\",\"content\":\"y\"}", "invalid_argument",
               "metadata is required");
    expect_err(f, "workspace_index_content", "{\"path\":\"/x\",\"content\":\"y\",\"metadata\":[1]}",
               "invalid_argument", "object or null");
    expect_err(f, "workspace_index_content",
               "{\"path\":\"a/../../b\",\"content\":\"y\",\"metadata\":null}", VOLTAGENT_E_TRAVERSAL,
               NULL);
    /* A tool of another toolkit is not this one's. */
    cJSON *res = NULL;
    bool err;
    assert_int_equal(voltagent_search_call(&f->ctx, "read_file", NULL, &res, &err), -ENOENT);
    /* Without a session there is nowhere to keep an index: a clear error, not a crash. */
    struct tool_session *s = f->ctx.session;
    f->ctx.session = NULL;
    expect_err(f, "workspace_search", "{\"query\":\"x\"}", "io_error", "session");
    f->ctx.session = s;
}

static void listed_with_upstream_schemas(void **state)
{
    struct fx *f = *state;
    cJSON *arr = cJSON_CreateArray();
    assert_int_equal(voltagent_search_list(&f->ctx, arr), 0);
    assert_int_equal(cJSON_GetArraySize(arr), 3);
    const cJSON *s = cJSON_GetArrayItem(arr, 2);
    assert_string_equal(fx_str(s, "name"), "workspace_search");
    const cJSON *props = fx_item(fx_item(s, "inputSchema"), "properties");
    const char *names[] = {"query",          "mode",           "top_k",           "path",
                           "glob",           "snippet_length", "include_content", "min_score",
                           "lexical_weight", "vector_weight"};
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        assert_non_null(cJSON_GetObjectItem(props, names[i]));
    cJSON_Delete(arr);
    /* disabled by policy: not listed (the gate's list, tools/gate.c) */
    struct tool_rule rule = {.name = "workspace_index", .enabled = false};
    f->ctx.rules = &rule;
    f->ctx.n_rules = 1;
    arr = tool_surface_list(tool_surface_find("voltagent"), &f->ctx);
    assert_non_null(arr);
    for (const cJSON *t = arr->child; t; t = t->next)
        assert_string_not_equal(fx_str(t, "name"), "workspace_index");
    assert_non_null(cJSON_GetArrayItem(arr, 0));
    cJSON_Delete(arr);
    f->ctx.rules = NULL;
    f->ctx.n_rules = 0;
}

/* ---- the engine alone ----------------------------------------------------------------------- */

static void local_embedding_is_deterministic_and_normalised(void **state)
{
    (void)state;
    float a[VS_LOCAL_DIM], b[VS_LOCAL_DIM], c[VS_LOCAL_DIM];
    const char *t = "Feature hashing of words and trigrams";
    assert_true(voltagent_index_embed_local(t, strlen(t), a));
    assert_true(voltagent_index_embed_local(t, strlen(t), b));
    assert_memory_equal(a, b, sizeof(a));
    double norm = 0;
    for (int i = 0; i < VS_LOCAL_DIM; i++)
        norm += (double)a[i] * a[i];
    assert_true(fabs(norm - 1.0) < 1e-5);
    /* case and punctuation do not matter (upstream's tokens) */
    const char *u = "FEATURE hashing, of words AND trigrams!";
    assert_true(voltagent_index_embed_local(u, strlen(u), c));
    assert_memory_equal(a, c, sizeof(a));
    /* no feature: all zero */
    assert_false(voltagent_index_embed_local("!!! ...", 7, c));
    for (int i = 0; i < VS_LOCAL_DIM; i++)
        assert_true(c[i] == 0.0f);
}

static void index_caps_refuse_clearly(void **state)
{
    (void)state;
    struct voltagent_index *ix;
    assert_int_equal(voltagent_index_new(2, 1 << 20, &ix), 0);
    struct broker_err e = {0};
    struct voltagent_index_doc *d[3];
    for (int i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof(id), "/d%d", i);
        d[i] = voltagent_index_doc_new(id, strdup("some words"), 10, NULL, NULL, NULL, 0);
        assert_non_null(d[i]);
    }
    /* three documents into a two-document index: refused, nothing added */
    assert_int_equal(voltagent_index_add(ix, d, 3, &e), -1);
    assert_int_equal(e.kind, BROKER_E_TOO_LARGE);
    assert_non_null(strstr(e.msg, "at most 2 documents"));
    assert_int_equal(voltagent_index_count(ix), 0);
    assert_int_equal(voltagent_index_add(ix, d, 2, &e), 0);
    assert_int_equal(voltagent_index_count(ix), 2);
    /* replacing one keeps the count */
    struct voltagent_index_doc *again = voltagent_index_doc_new("/d0", strdup("other words"), 11, NULL,
                                                                NULL, NULL, 0);
    assert_int_equal(voltagent_index_add(ix, &again, 1, &e), 0);
    assert_int_equal(voltagent_index_count(ix), 2);
    voltagent_index_doc_free(d[2]);
    voltagent_index_free(ix);
    /* bytes */
    assert_int_equal(voltagent_index_new(100, 1000, &ix), 0);
    char *big = malloc(2000);
    memset(big, 'a', 1999);
    big[1999] = '\0';
    struct voltagent_index_doc *bd = voltagent_index_doc_new("/big", big, 1999, NULL, NULL, NULL, 0);
    assert_int_equal(voltagent_index_add(ix, &bd, 1, &e), -1);
    assert_non_null(strstr(e.msg, "MiB"));
    voltagent_index_doc_free(bd);
    voltagent_index_free(ix);
}

static void index_content_over_the_session_cap(void **state)
{
    struct fx *f = *state;
    /* one document bigger than the whole index may hold */
    size_t n = VS_MAX_BYTES + 10;
    char *big = malloc(n + 1);
    memset(big, 'w', n);
    big[n] = '\0';
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "path", "/huge");
    cJSON_AddStringToObject(a, "content", big);
    cJSON_AddNullToObject(a, "metadata");
    free(big);
    cJSON *res = NULL;
    bool err = false;
    assert_int_equal(tool_surface_call(f->s, &f->ctx, "workspace_index_content", a, &res, &err), 0);
    assert_true(err);
    assert_string_equal(fx_str(res, "code"), "too_large");
    cJSON_Delete(res);
    cJSON_Delete(a);
}

/* Past the document cap through the tool: refused as a whole, with the cap in the message, and
 * what was indexed before stays searchable. */
static void workspace_index_past_the_document_cap(void **state)
{
    struct fx *f = *state;
    add(f, "/kept", "still here");
    char name[64];
    for (int i = 0; i <= VS_MAX_DOCS; i++) {
        snprintf(name, sizeof(name), "many/f%05d.txt", i);
        fx_put(f, name, "word");
    }
    expect_err(f, "workspace_index", "{\"path\":\"/many\"}", "too_large", "more than 5000 files");
    cJSON *r = search(f, "{\"query\":\"still\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 1);
    cJSON_Delete(r);
    r = search(f, "{\"query\":\"word\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 0);
    cJSON_Delete(r);
    /* a narrower glob fits */
    r = fx_ok(f, "workspace_index", "{\"path\":\"/many\",\"glob\":\"f0000*.txt\"}");
    assert_int_equal(fx_num(r, "indexed"), 10);
    cJSON_Delete(r);
}

/* ---- the external embedding command (policy tools.embedding_command) ------------------------ */

/* A toy embedder in awk: per text, [count of "red", count of "blue", 1]. It reads the texts
 * from stdin, so a right answer proves the texts went in and the vectors came back. */
static const char TOY_EMBEDDER[] =
    "awk -v RS='\",\"' '{ r = gsub(/red/, \"&\"); b = gsub(/blue/, \"&\"); "
    "printf \"%s[%d,%d,1]\", (NR > 1 ? \",\" : \"[\"), r, b } END { print \"]\" }'";

static void external_embedding_command(void **state)
{
    struct fx *f = *state;
    struct sandbox_profile p;
    sandbox_profile_default(&p);
    f->ctx.command_profile = &p;
    chmod(f->ws, 0777);
    /* The role may not run commands; the policy's embedder runs all the same. */
    f->ctx.allow_commands = false;
    f->ctx.limits.embedding_command = TOY_EMBEDDER;
    add(f, "/r", "red red red");
    add(f, "/b", "blue blue");
    add(f, "/rb", "red blue");
    expect_top(f, "{\"query\":\"red\",\"mode\":\"vector\"}", "/r");
    expect_top(f, "{\"query\":\"blue\",\"mode\":\"vector\"}", "/b");
    expect_top(f, "{\"query\":\"blue red\",\"mode\":\"vector\"}", "/rb");
    /* a failing or babbling embedder: a clear error, the index unchanged */
    f->ctx.limits.embedding_command = "echo broken >&2; exit 3";
    expect_err(f, "workspace_index_content", "{\"path\":\"/x\",\"content\":\"red\",\"metadata\":null}",
               "execution_failed", "exited with status 3: broken");
    f->ctx.limits.embedding_command = "echo '[[1,2],[3]]'";
    expect_err(f, "workspace_search", "{\"query\":\"red\",\"mode\":\"vector\"}", "execution_failed",
               "JSON array of 1 vectors");
    f->ctx.limits.embedding_command = "echo '[[1,\"x\"]]'";
    expect_err(f, "workspace_search", "{\"query\":\"red\",\"mode\":\"vector\"}", "execution_failed",
               "non-number");
    /* bm25 needs no embedding */
    cJSON *r = search(f, "{\"query\":\"red\",\"mode\":\"bm25\"}");
    assert_int_equal(fx_num(r, "total"), 2);
    cJSON_Delete(r);
    f->ctx.command_profile = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        VT(bm25_ranks_known_answers),
        VT(bm25_score_is_upstreams_formula),
        VT(vector_ranks_known_answers),
        VT(hybrid_ranks_known_answers),
        VT(result_shape_as_upstream),
        VT(filters_and_limits),
        VT(workspace_index_walks_files),
        VT(errors),
        VT(listed_with_upstream_schemas),
        VT(local_embedding_is_deterministic_and_normalised),
        VT(index_caps_refuse_clearly),
        VT(index_content_over_the_session_cap),
        VT(workspace_index_past_the_document_cap),
        VT(external_embedding_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
