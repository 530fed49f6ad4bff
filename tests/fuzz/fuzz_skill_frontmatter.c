/* tests/fuzz/fuzz_skill_frontmatter.c: a SKILL.md is workspace content, so its front matter is
 * hostile input. The bytes go to the front matter parser (gray-matter's split, then libyaml) and
 * the result must be consistent: a failure clears everything, a success gives strings only, lists
 * within their cap, no allowlist entry with a ".." segment or '~', and a body inside the input. */
#include "tools/voltagent/index.h"

#include <stdlib.h>
#include <string.h>

static void check_list(char **v, size_t n, bool paths)
{
    if ((v == NULL) != (n == 0) || n > VS_SKILL_MAX_LIST)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (!v[i] || !*v[i])
            abort();
        if (paths && (strchr(v[i], '~') || strchr(v[i], '\\')))
            abort();
        for (const char *p = v[i]; paths && (p = strstr(p, "..")); p += 2)
            if ((p == v[i] || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    /* Files are read as NUL-free text; keep the copy NUL-terminated like broker_read's. */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct voltagent_skill_meta m;
    struct broker_err e = {0};
    const char *body;
    size_t body_len;
    int r = voltagent_skills_frontmatter(text, size, &m, &body, &body_len, &e);
    if (r == 0) {
        if (body < text || body + body_len > text + size)
            abort();
        check_list(m.tags, m.n_tags, false);
        check_list(m.references, m.n_references, true);
        check_list(m.scripts, m.n_scripts, true);
        check_list(m.assets, m.n_assets, true);
    } else {
        if (r != -1 || !e.msg[0] || m.name || m.id || m.references || m.n_assets)
            abort();
    }
    voltagent_skills_meta_clear(&m);
    free(text);
    return 0;
}
