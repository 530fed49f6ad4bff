/* tools/kward/outline.c: summarize_file_structure's outliner: universal-ctags, run on the file's
 * text in a command sandbox, its JSON lines parsed here as untrusted and mapped onto the seed's
 * declaration kinds.
 * Why ctags and not patterns of our own: a maintained parser per language knows declarations a
 * line pattern misses or invents (docs/protocol-kward.md: well-kept tools over hand-written code).
 * Why in a sandbox: ctags is a full parser of untrusted workspace bytes, so it runs where a bug
 * in it can reach nothing (no network, the workspace read-only, the policy's limits); the cost
 * is one sandbox start per outline, up to eight per context_for_task call (figures in
 * docs/protocol-kward.md). */
#include "tools/kward/kward.h"

#include "tools/broker/broker.h"
#include "tools/tool.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIGNATURE 200u

static const struct {
    const char *suffix;
    const char *lang;
} by_suffix[] = {
    {".rb", "ruby"},
    {".rake", "ruby"},
    {".gemspec", "ruby"},
    {".ru", "ruby"},
    {"/Gemfile", "ruby"},
    {"/Rakefile", "ruby"},
    {".py", "python"},
    {".pyi", "python"},
    {".js", "javascript"},
    {".jsx", "javascript"},
    {".mjs", "javascript"},
    {".cjs", "javascript"},
    {".ts", "typescript"},
    {".tsx", "typescript"},
    {".mts", "typescript"},
    {".cts", "typescript"},
    {".go", "go"},
    {".rs", "rust"},
    {".java", "java"},
    {".cs", "csharp"},
    {".c", "c"},
    {".h", "c"},
};

const char *kward_language(const char *path)
{
    if (!path)
        return NULL;
    size_t pl = strlen(path);
    for (size_t i = 0; i < sizeof(by_suffix) / sizeof(by_suffix[0]); i++) {
        const char *s = by_suffix[i].suffix;
        size_t sl = strlen(s);
        if (s[0] == '/') { /* a whole name: "Gemfile" alone or ".../Gemfile" */
            if ((pl == sl - 1 && !strcmp(path, s + 1)) || (pl >= sl && !strcmp(path + pl - sl, s)))
                return by_suffix[i].lang;
        } else if (pl > sl && !strcmp(path + pl - sl, s)) {
            return by_suffix[i].lang;
        }
    }
    return NULL;
}

/* ctags' name for each of our languages (--language-force: the text has no file name). */
static const struct {
    const char *lang, *ctags;
} ctags_names[] = {
    {"ruby", "Ruby"},
    {"python", "Python"},
    {"javascript", "JavaScript"},
    {"typescript", "TypeScript"},
    {"go", "Go"},
    {"rust", "Rust"},
    {"java", "Java"},
    {"csharp", "C#"},
    {"c", "C"},
};

static const char *ctags_name(const char *lang)
{
    for (size_t i = 0; lang && i < sizeof(ctags_names) / sizeof(ctags_names[0]); i++)
        if (!strcmp(ctags_names[i].lang, lang))
            return ctags_names[i].ctags;
    return NULL;
}

/* ---- running a tool ------------------------------------------------------------------------- */

int kward_tool_run(const struct tool_ctx *ctx, const char *what, const char *package,
                   const char *command, const char *const *env, size_t n_env, const char *input,
                   size_t input_len, struct broker_command_result *r, struct broker_err *e)
{
    /* The command is ours, run whatever the role's own command authority (as the embedding
     * command of tools/voltagent/index.c): the role's command profile when it may run commands,
     * else the sandbox module's default one. It only reads, so the workspace is read-only. */
    struct tool_ctx c = *ctx;
    if (!ctx->allow_commands)
        c.command_profile = NULL;
    c.allow_commands = true;
    c.read_only = true;
    c.egress_spec = NULL; /* the outliner and differ parse workspace bytes: never any network */
    c.limits.max_output_bytes = KWARD_TOOL_OUTPUT_BYTES;
    struct broker_command_opts o = {.command = command,
                                    .timeout_sec = KWARD_TOOL_TIMEOUT_SEC,
                                    .env = env,
                                    .n_env = n_env,
                                    .input = input ? input : "",
                                    .input_len = input ? input_len : 0};
    if (broker_command(&c, &o, r, e) < 0)
        return broker_fail(e, e->kind, NULL, "%s could not run: %s", what, e->msg);
    if (r->timed_out) {
        broker_command_result_clear(r);
        return broker_fail(e, BROKER_E_TIMEOUT, NULL, "%s ran out of time (%.0f s)", what,
                           KWARD_TOOL_TIMEOUT_SEC);
    }
    if (r->exit_code == 127) {
        broker_command_result_clear(r);
        return broker_fail(e, BROKER_E_EXEC, NULL,
                           "%s is not installed in the command sandbox; install the Debian "
                           "package %s (make deps)",
                           what, package);
    }
    return 0;
}

/* ---- ctags' kinds onto the seed's ----------------------------------------------------------- */

static const char *const seed_kinds[] = {
    "class",    "struct", "interface",   "enum",     "union", "trait", "record", "module", "namespace",
    "function", "method", "constructor", "property", "type",  "impl",  "macro",  NULL};

static const char *seed_kind(const char *k)
{
    for (size_t i = 0; seed_kinds[i]; i++)
        if (!strcmp(seed_kinds[i], k))
            return seed_kinds[i];
    return NULL;
}

/* The last component of a ctags scope ("Shop.Orders.Order" -> "Order"). */
static const char *scope_last(const char *scope)
{
    const char *d = strrchr(scope, '.');
    return d ? d + 1 : scope;
}

/* Whether the declaration's source line reads as a function value (JavaScript's
 * `const f = (a) => ...` or `= function`): ctags reports those as constants or variables. */
static bool function_value(const char *s, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if ((s[i] == '=' && s[i + 1] == '>') || (i + 8 <= n && !memcmp(s + i, "function", 8)))
            return true;
    return false;
}

/* The seed's kind for one ctags tag, or NULL when the tag is not a declaration the outline
 * shows (fields, members, variables, enumerators, packages, C macros and typedefs). LINE is
 * the declaration's source line. */
static const char *map_kind(const char *lang, const char *kind, const char *name, const char *scope,
                            const char *scope_kind, const char *line, size_t line_len)
{
    bool scoped = scope && *scope;
    if (!strcmp(lang, "go")) {
        if (!strcmp(kind, "func"))
            return scope_kind && strcmp(scope_kind, "package") ? "method" : "function";
        if (!strcmp(kind, "struct") || !strcmp(kind, "interface") || !strcmp(kind, "type"))
            return seed_kind(kind);
        return NULL;
    }
    if (!strcmp(lang, "rust")) {
        if (!strcmp(kind, "interface"))
            return "trait";
        if (!strcmp(kind, "implementation"))
            return "impl";
        if (!strcmp(kind, "method") || !strcmp(kind, "function"))
            return scoped ? "method" : "function";
        if (!strcmp(kind, "typedef"))
            return "type";
        if (!strcmp(kind, "struct") || !strcmp(kind, "enum") || !strcmp(kind, "union") ||
            !strcmp(kind, "module") || !strcmp(kind, "macro"))
            return seed_kind(kind);
        return NULL;
    }
    if (!strcmp(lang, "ruby")) {
        if (!strcmp(kind, "method") || !strcmp(kind, "singletonMethod"))
            return scoped ? "method" : "function";
        if (!strcmp(kind, "class") || !strcmp(kind, "module"))
            return kind[0] == 'c' ? "class" : "module";
        return NULL;
    }
    if (!strcmp(lang, "python")) {
        if (!strcmp(kind, "member") || !strcmp(kind, "function"))
            return scoped && !strcmp(kind, "member") ? "method" : "function";
        if (!strcmp(kind, "class"))
            return "class";
        return NULL;
    }
    if (!strcmp(lang, "javascript") || !strcmp(lang, "typescript")) {
        if (!strcmp(kind, "method") || !strcmp(kind, "getter") || !strcmp(kind, "setter"))
            return "method";
        if (!strcmp(kind, "function") || !strcmp(kind, "generator"))
            return scoped ? "method" : "function";
        if (!strcmp(kind, "alias"))
            return "type";
        if ((!strcmp(kind, "constant") || !strcmp(kind, "variable")) && !scoped)
            return function_value(line, line_len) ? "function" : NULL;
        if (!strcmp(kind, "class") || !strcmp(kind, "interface") || !strcmp(kind, "enum") ||
            !strcmp(kind, "namespace"))
            return seed_kind(kind);
        return NULL;
    }
    if (!strcmp(lang, "java") || !strcmp(lang, "csharp")) {
        if (!strcmp(kind, "method"))
            return scoped && name && !strcmp(name, scope_last(scope)) ? "constructor" : "method";
        if (!strcmp(kind, "annotation"))
            return "interface";
        if (!strcmp(kind, "property") && !strcmp(lang, "csharp"))
            return "property";
        if (!strcmp(kind, "class") || !strcmp(kind, "interface") || !strcmp(kind, "enum") ||
            !strcmp(kind, "struct") || !strcmp(kind, "record") || !strcmp(kind, "namespace"))
            return seed_kind(kind);
        return NULL;
    }
    if (!strcmp(lang, "c")) {
        if (!strcmp(kind, "function") || !strcmp(kind, "struct") || !strcmp(kind, "union") ||
            !strcmp(kind, "enum"))
            return seed_kind(kind);
        return NULL;
    }
    return NULL;
}

/* ---- parsing ctags' JSON lines -------------------------------------------------------------- */

struct cand {
    uint32_t line, end; /* end 0: ctags gave none */
    const char *kind;
    size_t seq; /* ctags' order, so equal lines sort stably */
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *str_field(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A positive line number no larger than N_LINES, or 0. */
static uint32_t line_field(const cJSON *o, const char *k, size_t n_lines)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1) || v->valuedouble > (double)n_lines)
        return 0;
    return (uint32_t)v->valuedouble;
}

static unsigned indent_of(const char *s, size_t n, size_t *skip)
{
    size_t i = 0;
    unsigned col = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t') && col < 1024) {
        col += s[i] == '\t' ? 4 : 1;
        i++;
    }
    *skip = i;
    return col;
}

/* Whether a line at the end of a guessed range belongs to what follows or encloses it: blank,
 * or indented less than the declaration (the enclosing block's "}" or "end"). */
static bool trailing_line(const char *s, size_t n, unsigned indent)
{
    size_t skip;
    unsigned col = indent_of(s, n, &skip);
    while (skip < n && (s[skip] == '\r' || s[skip] == '\n'))
        skip++;
    return skip == n || col < indent;
}

int kward_outline_from_tags(const char *language, const char *tags, size_t tags_len, const char *text,
                            size_t len, size_t max, struct kward_outline *out)
{
    memset(out, 0, sizeof(*out));
    if (!language || !tags)
        return 0;
    /* Line starts of the text: starts[i] is where line i + 1 begins, starts[n_lines] == len. */
    size_t n_lines = 0;
    for (size_t i = 0; i < len; i++)
        n_lines += text[i] == '\n';
    if (len && text[len - 1] != '\n')
        n_lines++;
    size_t *starts = malloc((n_lines + 1) * sizeof(*starts));
    struct cand *cands = NULL;
    size_t n_cands = 0, cap = 0;
    int r = 0;
    if (!starts)
        return -ENOMEM;
    for (size_t i = 0, ln = 0; ln < n_lines; ln++) {
        starts[ln] = i;
        const char *nl = memchr(text + i, '\n', len - i);
        i = nl ? (size_t)(nl - text) + 1 : len;
    }
    starts[n_lines] = len;

    size_t seen = 0;
    for (size_t pos = 0; pos < tags_len && seen < KWARD_TAGS_MAX_LINES; seen++) {
        const char *nl = memchr(tags + pos, '\n', tags_len - pos);
        if (!nl)
            break; /* a cut last line: ignored */
        size_t ll = (size_t)(nl - (tags + pos));
        const char *ls = tags + pos;
        pos += ll + 1;
        if (ll == 0 || ll > KWARD_TAGS_MAX_LINE)
            continue;
        cJSON *o = cJSON_ParseWithLength(ls, ll);
        if (!cJSON_IsObject(o)) {
            cJSON_Delete(o);
            continue;
        }
        const char *type = str_field(o, "_type"), *kind = str_field(o, "kind");
        uint32_t line = line_field(o, "line", n_lines);
        const char *mapped = NULL;
        if (type && !strcmp(type, "tag") && kind && line) {
            size_t a = starts[line - 1], b = starts[line];
            mapped = map_kind(language, kind, str_field(o, "name"), str_field(o, "scope"),
                              str_field(o, "scopeKind"), text + a, b - a);
        }
        if (mapped) {
            uint32_t end = line_field(o, "end", n_lines);
            if (n_cands == cap) {
                size_t nc = cap ? cap * 2 : 64;
                struct cand *t = realloc(cands, nc * sizeof(*t));
                if (!t) {
                    cJSON_Delete(o);
                    r = -ENOMEM;
                    goto out;
                }
                cands = t;
                cap = nc;
            }
            cands[n_cands] = (struct cand){
                .line = line, .end = end >= line ? end : 0, .kind = mapped, .seq = n_cands};
            n_cands++;
        }
        cJSON_Delete(o);
    }
    /* File order, one entry per line (the first ctags gave for it). */
    if (n_cands)
        qsort(cands, n_cands, sizeof(*cands), cand_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n_cands; i++)
        if (!k || cands[i].line != cands[k - 1].line)
            cands[k++] = cands[i];
    n_cands = k;
    out->total = n_cands;
    size_t keep = n_cands < max ? n_cands : max;
    if (keep && !(out->v = calloc(keep, sizeof(*out->v)))) {
        r = -ENOMEM;
        goto out;
    }
    unsigned *indents = calloc(n_cands ? n_cands : 1, sizeof(*indents));
    if (!indents) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n_cands; i++) {
        size_t skip;
        indents[i] = indent_of(text + starts[cands[i].line - 1],
                               starts[cands[i].line] - starts[cands[i].line - 1], &skip);
    }
    for (size_t i = 0; i < keep; i++) {
        const struct cand *cd = &cands[i];
        struct kward_outline_entry *en = &out->v[i];
        size_t a = starts[cd->line - 1], b = starts[cd->line];
        size_t skip;
        en->indent = indent_of(text + a, b - a, &skip);
        uint32_t end = cd->end;
        if (!end) {
            /* ctags gave no end (its JavaScript, TypeScript and Rust parsers): up to the line
             * before the next declaration at the same or a lesser indentation, less the blank
             * lines and the enclosing block's closing lines. */
            size_t next = n_lines + 1;
            for (size_t j = i + 1; j < n_cands; j++)
                if (indents[j] <= en->indent) {
                    next = cands[j].line;
                    break;
                }
            end = (uint32_t)(next - 1);
            while (end > cd->line &&
                   trailing_line(text + starts[end - 1], starts[end] - starts[end - 1], en->indent))
                end--;
            /* A declaration that closes on its own line ("type T = U;", "fn f();") is one line. */
            size_t e2 = b;
            while (e2 > a + skip && (text[e2 - 1] == '\n' || text[e2 - 1] == '\r' ||
                                     text[e2 - 1] == ' ' || text[e2 - 1] == '\t'))
                e2--;
            if (e2 > a + skip && text[e2 - 1] == ';')
                end = cd->line;
        }
        size_t sb = a + skip, se = b;
        while (se > sb && (text[se - 1] == '\n' || text[se - 1] == '\r'))
            se--;
        size_t sl = se - sb > MAX_SIGNATURE ? MAX_SIGNATURE : se - sb;
        while (sl < se - sb && sl > 0 && ((unsigned char)text[sb + sl] & 0xC0) == 0x80)
            sl--; /* never cut a UTF-8 sequence */
        en->line = cd->line;
        en->end_line = end;
        en->kind = cd->kind;
        if (!(en->signature = strndup(text + sb, sl))) {
            free(indents);
            r = -ENOMEM;
            out->n = i;
            goto out;
        }
        out->n = i + 1;
    }
    free(indents);
out:
    free(starts);
    free(cands);
    if (r < 0)
        kward_outline_clear(out);
    return r;
}

/* ctags, told the language (the text comes without a name) and to read no option files: the
 * cwd is the workspace, whose .ctags.d the agent writes. Sorted by nothing, so file order. */
#define CTAGS_COMMAND                                                                        \
    "command -v ctags >/dev/null 2>&1 || exit 127; "                                         \
    "cat > /tmp/source && exec ctags --options=NONE --language-force=\"$KWARD_CTAGS_LANG\" " \
    "--output-format=json --sort=no --fields=-P+nKes -o - /tmp/source"

int kward_outline_build(const struct tool_ctx *ctx, const char *language, const char *text, size_t len,
                        size_t max, struct kward_outline *out, struct broker_err *e)
{
    memset(out, 0, sizeof(*out));
    const char *cl = ctags_name(language);
    if (!cl)
        return 0;
    char env0[64];
    snprintf(env0, sizeof(env0), "KWARD_CTAGS_LANG=%s", cl);
    const char *const env[] = {env0};
    struct broker_command_result r = {0};
    if (kward_tool_run(ctx, "universal-ctags (ctags)", "universal-ctags", CTAGS_COMMAND, env, 1, text,
                       len, &r, e) < 0)
        return -1;
    int rc = 0;
    if (r.exit_code != 0)
        rc = broker_fail(e, BROKER_E_EXEC, NULL, "ctags exited with status %d: %.200s", r.exit_code,
                         r.err);
    else if (kward_outline_from_tags(language, r.out, r.out_len, text, len, max, out) < 0)
        rc = broker_fail(e, BROKER_E_IO, NULL, "out of memory for the outline");
    broker_command_result_clear(&r);
    return rc;
}

void kward_outline_clear(struct kward_outline *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++)
        free(o->v[i].signature);
    free(o->v);
    memset(o, 0, sizeof(*o));
}

char *kward_outline_render(const struct kward_outline *o)
{
    size_t cap = 1;
    for (size_t i = 0; i < o->n; i++)
        cap += strlen(o->v[i].signature) + 96;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t n = 0;
    s[0] = '\0';
    for (size_t i = 0; i < o->n; i++) {
        const struct kward_outline_entry *e = &o->v[i];
        unsigned depth = e->indent / 2 > 6 ? 6 : e->indent / 2;
        char pad[16];
        memset(pad, ' ', depth * 2);
        pad[depth * 2] = '\0';
        if (e->end_line != e->line)
            n += (size_t)snprintf(s + n, cap - n, "%sline %u: %s%s (range %u-%u, %s)", i ? "\n" : "",
                                  e->line, pad, e->signature, e->line, e->end_line, e->kind);
        else
            n += (size_t)snprintf(s + n, cap - n, "%sline %u: %s%s (%s)", i ? "\n" : "", e->line, pad,
                                  e->signature, e->kind);
    }
    return s;
}
