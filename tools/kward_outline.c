/* tools/kward_outline.c: summarize_file_structure's outliner. One table of PCRE2 line patterns
 * per language, tried on each line without its indentation; a declaration's range runs to the
 * line before the next declaration at the same or a lesser indentation.
 * Why patterns in the supervisor and not universal-ctags: the seed asks for exactly this
 * ("lightweight pattern matching rather than a full parser"), and a pattern set whose regexes are
 * ours, run on at most 256 KB with PCRE2 match, depth and heap limits per line, cannot be driven
 * into unbounded work by workspace content; ctags would be a full parser of untrusted bytes and
 * so a command sandbox (~13 ms to start) per outline, up to eight per context_for_task call. */
#include "tools/kward.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MATCH_LIMIT 100000u
#define DEPTH_LIMIT 1000u
#define HEAP_LIMIT_KIB 1024u
#define MAX_SIGNATURE 200u

/* KIND_BY_INDENT: "function" at the top level, "method" when indented (def in Ruby, Python,
 * fn in Rust). KIND_CAPTURE: the text of the pattern's first group ("class", "enum", ...). */
#define KIND_BY_INDENT "function|method"
#define KIND_CAPTURE "$1"

struct pattern {
    const char *re;
    const char *kind;
    bool top_only; /* only at indentation 0 (C function definitions) */
};

/* Java and C# modifiers, in front of a type or member declaration. */
#define JMOD "(?:(?:public|private|protected|internal|static|final|abstract|sealed|partial|readonly|async|override|virtual|new|unsafe|extern|strictfp|synchronized|native|default|transient|volatile|file|required)\\s+)"
#define RUST_VIS "(?:pub(?:\\s*\\([^)]*\\))?\\s+)?"

static const struct pattern ruby[] = {
    {"^module\\s+[A-Z]\\w*(?:::\\w+)*", "module", false},
    {"^class\\s+(?:<<\\s*\\w+|[A-Z]\\w*(?:::\\w+)*)", "class", false},
    {"^(?:(?:private|protected|public|module_function)\\s+)?def\\s+(?:self\\.)?[\\w.]+[?!=]?", KIND_BY_INDENT, false},
    {NULL, NULL, false},
};

static const struct pattern python[] = {
    {"^class\\s+\\w+", "class", false},
    {"^(?:async\\s+)?def\\s+\\w+\\s*\\(", KIND_BY_INDENT, false},
    {NULL, NULL, false},
};

/* JavaScript and TypeScript share one table: TypeScript's extra forms never match JavaScript. */
static const struct pattern js[] = {
    {"^(?:export\\s+)?(?:default\\s+)?(?:declare\\s+)?(?:abstract\\s+)?class\\s+[\\w$]+", "class", false},
    {"^(?:export\\s+)?(?:default\\s+)?(?:declare\\s+)?(?:async\\s+)?function\\s*\\*?\\s*[\\w$]+\\s*[<(]", "function", false},
    {"^(?:export\\s+)?(?:declare\\s+)?interface\\s+[\\w$]+", "interface", false},
    {"^(?:export\\s+)?(?:declare\\s+)?type\\s+[\\w$]+\\s*(?:<[^>]*>)?\\s*=", "type", false},
    {"^(?:export\\s+)?(?:declare\\s+)?(?:const\\s+)?enum\\s+[\\w$]+", "enum", false},
    {"^(?:export\\s+)?(?:declare\\s+)?(?:namespace|module)\\s+[\\w$.]+\\s*\\{", "namespace", false},
    {"^(?:export\\s+)?(?:const|let|var)\\s+[\\w$]+\\s*(?::[^=]+)?=\\s*(?:async\\s+)?(?:function\\b|(?:\\([^)]*\\)|[\\w$]+)\\s*(?::\\s*[^=]+)?=>)", "function", false},
    {"^(?!(?:if|for|while|switch|catch|return|function|else|do|new|typeof|await|yield|super|this)\\b)"
     "(?:(?:public|private|protected|static|readonly|abstract|override|async|get|set|declare)\\s+)*\\*?"
     "(?:constructor|[A-Za-z_$][\\w$]*)\\s*(?:<[^>]*>)?\\s*\\([^;]*\\)\\s*(?::\\s*[^{};=]+)?\\s*\\{\\s*\\}?\\s*$", "method", false},
    {NULL, NULL, false},
};

static const struct pattern go[] = {
    {"^func\\s+\\([^)]*\\)\\s*\\w+", "method", false},
    {"^func\\s+\\w+", "function", false},
    {"^type\\s+\\w+(?:\\[[^\\]]*\\])?\\s+(struct|interface)\\b", KIND_CAPTURE, false},
    {"^type\\s+\\w+(?:\\[[^\\]]*\\])?\\s+\\S", "type", false},
    {NULL, NULL, false},
};

static const struct pattern rust[] = {
    {"^" RUST_VIS "(?:default\\s+)?(?:const\\s+)?(?:async\\s+)?(?:unsafe\\s+)?(?:extern\\s+(?:\"[^\"]*\"\\s+)?)?fn\\s+\\w+", KIND_BY_INDENT, false},
    {"^" RUST_VIS "(?:unsafe\\s+)?(struct|enum|trait|union|type)\\s+\\w+", KIND_CAPTURE, false},
    {"^" RUST_VIS "mod\\s+\\w+", "module", false},
    {"^(?:unsafe\\s+)?impl\\b", "impl", false},
    {"^macro_rules!\\s*\\w+", "macro", false},
    {NULL, NULL, false},
};

/* Java and C#: types, then constructors (a modifier required, so a call never reads as one),
 * then methods (a type and a name before the parameters; never a statement keyword). */
static const struct pattern java[] = {
    {"^" JMOD "*(class|interface|enum|record|@interface)\\s+\\w+", KIND_CAPTURE, false},
    {"^" JMOD "+\\w+\\s*\\([^;]*\\)\\s*(?:throws\\s+[\\w.,\\s]+)?\\s*\\{?\\s*$", "constructor", false},
    {"^(?!(?:return|new|throw|if|else|for|while|switch|case|catch|do|try|var|yield|assert)\\b)" JMOD
     "*(?:<(?:[^<>]|<[^<>]*>)+>\\s+)?[\\w.<>\\[\\]?,]+\\s+\\w+\\s*\\([^;]*\\)\\s*(?:throws\\s+[\\w.,\\s]+)?\\s*\\{?\\s*$", "method", false},
    {NULL, NULL, false},
};

static const struct pattern csharp[] = {
    {"^(?:file\\s+)?namespace\\s+[\\w.]+", "namespace", false},
    {"^" JMOD "*(?:record\\s+)?(class|interface|enum|struct|record)\\s+\\w+", KIND_CAPTURE, false},
    {"^" JMOD "+\\w+\\s*\\([^;]*\\)\\s*(?::\\s*(?:base|this)\\s*\\([^;]*\\))?\\s*(?:\\{|=>.*)?\\s*$", "constructor", false},
    {"^(?!(?:return|new|throw|if|else|for|foreach|while|switch|case|catch|using|lock|yield|await|do|try|var|goto)\\b)" JMOD
     "*[\\w.<>\\[\\]?,]+\\s+\\w+\\s*(?:<[^()]*>)?\\s*\\([^;]*\\)\\s*(?:where\\s+[^{;]+)?\\s*(?:\\{|=>.*)?\\s*$", "method", false},
    {"^(?!(?:return|new|throw|if|else|for|foreach|while|switch|case|catch|using|lock|yield|await|do|try|var|goto)\\b)" JMOD
     "*[\\w.<>\\[\\]?,]+\\s+\\w+\\s*\\{\\s*(?:get|set|init)\\b", "property", false},
    {NULL, NULL, false},
};

/* C: aggregate definitions anywhere, function definitions at the top level only (a line with a
 * type, a name and parameters that does not end a statement). */
static const struct pattern c[] = {
    {"^(?:typedef\\s+)?(struct|union|enum)(?:\\s+\\w+)?\\s*\\{", KIND_CAPTURE, false},
    {"^(?!(?:if|else|for|while|switch|return|do|case|sizeof|typedef|goto)\\b)(?:[A-Za-z_]\\w*[\\s*]+)+([A-Za-z_]\\w*)\\s*"
     "\\((?:[^;]*\\)\\s*(?:__attribute__\\s*\\(\\(.*\\)\\))?\\s*\\{?|[^;)]*,)\\s*$", "function", true},
    {NULL, NULL, false},
};

struct language {
    const char *name;
    const struct pattern *pats;
    const char *trim; /* line starts that belong to the next declaration: comments, attributes */
};

static const struct language languages[] = {
    {"ruby", ruby, "#"},
    {"python", python, "#@"},
    {"javascript", js, "/*@"},
    {"typescript", js, "/*@"},
    {"go", go, "/*"},
    {"rust", rust, "/*#"},
    {"java", java, "/*@"},
    {"csharp", csharp, "/*["},
    {"c", c, "/*"},
};

static const struct {
    const char *suffix;
    const char *lang;
} by_suffix[] = {
    {".rb", "ruby"},       {".rake", "ruby"},     {".gemspec", "ruby"},  {".ru", "ruby"},
    {"/Gemfile", "ruby"},  {"/Rakefile", "ruby"}, {".py", "python"},     {".pyi", "python"},
    {".js", "javascript"}, {".jsx", "javascript"}, {".mjs", "javascript"}, {".cjs", "javascript"},
    {".ts", "typescript"}, {".tsx", "typescript"}, {".mts", "typescript"}, {".cts", "typescript"},
    {".go", "go"},         {".rs", "rust"},       {".java", "java"},     {".cs", "csharp"},
    {".c", "c"},           {".h", "c"},
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

/* ---- compiled patterns: built once, read-only afterwards, shared by every thread ----------- */

#define MAX_PATTERNS 8

struct compiled {
    pcre2_code *code[sizeof(languages) / sizeof(languages[0])][MAX_PATTERNS];
    pcre2_match_context *mctx;
    bool ok;
};

static struct compiled compiled;
static pthread_once_t compiled_once = PTHREAD_ONCE_INIT;

static void compile_all(void)
{
    compiled.mctx = pcre2_match_context_create(NULL);
    if (!compiled.mctx)
        return;
    pcre2_set_match_limit(compiled.mctx, MATCH_LIMIT);
    pcre2_set_depth_limit(compiled.mctx, DEPTH_LIMIT);
    pcre2_set_heap_limit(compiled.mctx, HEAP_LIMIT_KIB);
    for (size_t l = 0; l < sizeof(languages) / sizeof(languages[0]); l++)
        for (size_t p = 0; languages[l].pats[p].re; p++) {
            int err;
            PCRE2_SIZE off;
            /* No PCRE2_UTF: the patterns are ASCII, and a file's invalid bytes must not fail a
             * match (UTF checking would refuse the subject). */
            compiled.code[l][p] = pcre2_compile((PCRE2_SPTR)languages[l].pats[p].re,
                                                PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
            if (!compiled.code[l][p])
                return; /* a bad table entry: caught by the unit tests */
            pcre2_jit_compile(compiled.code[l][p], PCRE2_JIT_COMPLETE);
        }
    compiled.ok = true;
}

static const char *kind_names[] = {"class",  "struct", "interface", "enum",  "record", "union",
                                   "trait",  "type",   "annotation", NULL};

static const char *captured_kind(const char *s, size_t len)
{
    if (len == 10 && !memcmp(s, "@interface", 10))
        return "annotation";
    for (size_t i = 0; kind_names[i]; i++)
        if (strlen(kind_names[i]) == len && !memcmp(kind_names[i], s, len))
            return kind_names[i];
    return "declaration";
}

/* ---- building ------------------------------------------------------------------------------- */

struct cand {
    uint32_t line;
    unsigned indent;
    const char *kind;
    size_t sig_off, sig_len;
};

/* Whether a line at the end of a range belongs to what follows or encloses it rather than to
 * the declaration: blank lines, comments and attributes leading into the next declaration, and
 * lines indented less than the declaration (the enclosing block's "}" or "end"). */
static bool trimmed_line(const struct language *lang, const char *s, size_t len, unsigned indent)
{
    size_t i = 0;
    unsigned col = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t')) {
        col += s[i] == '\t' ? 4 : 1;
        i++;
    }
    while (i < len && (s[i] == '\r' || s[i] == '\n'))
        i++;
    if (i == len)
        return true; /* blank */
    if (col < indent)
        return true;
    if (s[i] == '}' || s[i] == ')' || s[i] == ']')
        return false; /* a closing brace ends the declaration before */
    if (s[i] && strchr(lang->trim, s[i]))
        return true;
    return s[i] == '/' && i + 1 < len && s[i + 1] == '/';
}

int kward_outline_build(const char *language, const char *text, size_t len, size_t max,
                        struct kward_outline *out)
{
    memset(out, 0, sizeof(*out));
    size_t li;
    for (li = 0; language && li < sizeof(languages) / sizeof(languages[0]); li++)
        if (!strcmp(languages[li].name, language))
            break;
    if (!language || li == sizeof(languages) / sizeof(languages[0]))
        return 0;
    pthread_once(&compiled_once, compile_all);
    if (!compiled.ok)
        return -ENOMEM;
    const struct language *lang = &languages[li];

    /* Line starts, so a range can be walked back over trailing blank and comment lines. */
    size_t n_lines = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\n')
            n_lines++;
    if (len && text[len - 1] != '\n')
        n_lines++;
    size_t *starts = malloc((n_lines + 1) * sizeof(*starts));
    struct cand *cands = NULL;
    size_t n_cands = 0, cap = 0;
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    int r = 0;
    if (!starts || !md) {
        r = -ENOMEM;
        goto out;
    }
    size_t pos = 0;
    for (size_t ln = 0; ln < n_lines; ln++) {
        starts[ln] = pos;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t s = pos;
        unsigned indent = 0;
        while (s < end && (text[s] == ' ' || text[s] == '\t')) {
            indent += text[s] == '\t' ? 4 : 1;
            s++;
        }
        size_t e = end;
        while (e > s && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\r'))
            e--;
        pos = nl ? end + 1 : len;
        if (e == s)
            continue;
        for (size_t p = 0; lang->pats[p].re; p++) {
            const struct pattern *pt = &lang->pats[p];
            if (pt->top_only && indent)
                continue;
            int rc = pcre2_match(compiled.code[li][p], (PCRE2_SPTR)(text + s), e - s, 0, 0, md,
                                 compiled.mctx);
            if (rc < 0)
                continue; /* no match, or a limit hit: not a declaration */
            const char *kind = pt->kind;
            if (!strcmp(kind, KIND_BY_INDENT)) {
                kind = indent ? "method" : "function";
            } else if (!strcmp(kind, KIND_CAPTURE)) {
                PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
                kind = rc > 1 && ov[2] != PCRE2_UNSET ? captured_kind(text + s + ov[2], ov[3] - ov[2])
                                                      : "declaration";
            }
            if (n_cands == cap) {
                size_t nc = cap ? cap * 2 : 64;
                struct cand *tmp = realloc(cands, nc * sizeof(*tmp));
                if (!tmp) {
                    r = -ENOMEM;
                    goto out;
                }
                cands = tmp;
                cap = nc;
            }
            cands[n_cands++] = (struct cand){.line = (uint32_t)(ln + 1), .indent = indent,
                                             .kind = kind, .sig_off = s, .sig_len = e - s};
            break;
        }
    }
    starts[n_lines] = len;
    out->total = n_cands;
    size_t keep = n_cands < max ? n_cands : max;
    if (keep && !(out->v = calloc(keep, sizeof(*out->v)))) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < keep; i++) {
        struct kward_outline_entry *en = &out->v[i];
        const struct cand *cd = &cands[i];
        /* The range ends before the next declaration at the same or a lesser indentation (or
         * at the file's end), less the blank lines, comments and attributes leading into it. */
        size_t next = n_lines + 1;
        for (size_t k = i + 1; k < n_cands; k++)
            if (cands[k].indent <= cd->indent) {
                next = cands[k].line;
                break;
            }
        size_t end = next - 1;
        /* A declaration that closes on its own line ("enum E { A, B };", "fn f();") is one line. */
        char last = text[cd->sig_off + cd->sig_len - 1];
        if (last == ';' || (last == '}' && memchr(text + cd->sig_off, '{', cd->sig_len)))
            end = cd->line;
        while (end > cd->line) {
            size_t a = starts[end - 1], b = starts[end];
            if (!trimmed_line(lang, text + a, b - a, cd->indent))
                break;
            end--;
        }
        size_t sl = cd->sig_len > MAX_SIGNATURE ? MAX_SIGNATURE : cd->sig_len;
        while (sl < cd->sig_len && sl > 0 && ((unsigned char)text[cd->sig_off + sl] & 0xC0) == 0x80)
            sl--; /* never cut a UTF-8 sequence */
        en->line = cd->line;
        en->end_line = (uint32_t)end;
        en->indent = cd->indent;
        en->kind = cd->kind;
        if (!(en->signature = strndup(text + cd->sig_off, sl))) {
            r = -ENOMEM;
            out->n = i;
            goto out;
        }
        out->n = i + 1;
    }
out:
    pcre2_match_data_free(md);
    free(starts);
    free(cands);
    if (r < 0)
        kward_outline_clear(out);
    return r;
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
            n += (size_t)snprintf(s + n, cap - n, "%sline %u: %s%s (%s)", i ? "\n" : "", e->line,
                                  pad, e->signature, e->kind);
    }
    return s;
}
