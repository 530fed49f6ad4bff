/* tests/unit/test_voltagent_skills.c: the VoltAgent skills toolkit through the surface's own
 * call on real SKILL.md files: the front matter parser (libyaml, upstream's typing rules),
 * discovery under /skills, activation per session, the allowlisted reads (and every way around
 * them refused), search, and upstream's texts. */
#include "wap_fixture.h"

#include "tools/session.h"
#include "tools/voltagent/voltagent.h"
#include "tools/voltagent/index.h"

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

static char *out_of(struct fx *f, const char *tool, const char *args)
{
    cJSON *r = fx_ok(f, tool, args);
    char *s = strdup(fx_str(r, "output"));
    cJSON_Delete(r);
    return s;
}

static void expect_out(struct fx *f, const char *tool, const char *args, const char *want)
{
    char *s = out_of(f, tool, args);
    if (strcmp(s, want)) {
        print_error("%s(%s):\nwant [%s]\ngot  [%s]\n", tool, args, want, s);
        free(s);
        fail();
    }
    free(s);
}

static void expect_err(struct fx *f, const char *tool, const char *args, const char *code,
                       const char *text)
{
    bool err;
    cJSON *r = fx_call(f, tool, args, &err);
    char *t = cJSON_PrintUnformatted(r);
    const cJSON *c = cJSON_GetObjectItem(r, "code"), *m = cJSON_GetObjectItem(r, "error");
    if (!err || !cJSON_IsString(c) || strcmp(c->valuestring, code) || !cJSON_IsString(m) ||
        (text && !strstr(m->valuestring, text))) {
        print_error("%s(%s): want %s [%s], got %s\n", tool, args, code, text ? text : "", t);
        free(t);
        fail();
    }
    free(t);
    cJSON_Delete(r);
}

static void skills_tree(struct fx *f)
{
    fx_put(f, "skills/pdf/SKILL.md",
           "---\n"
           "name: PDF Tools\n"
           "description: Extract text and tables from PDF files\n"
           "version: \"1.2\"\n"
           "tags: [pdf, documents]\n"
           "references:\n  - references/forms.md\n"
           "scripts: scripts/extract.py\n"
           "---\n"
           "# PDF\n\nUse scripts/extract.py to pull text out of a PDF.\n");
    fx_put(f, "skills/pdf/references/forms.md", "How to fill PDF forms.\n");
    fx_put(f, "skills/pdf/scripts/extract.py", "print('extract')\n");
    fx_put(f, "skills/pdf/secret.txt", "not listed anywhere\n");
    /* no front matter lists: the instructions' links are the allowlist (upstream infers them) */
    fx_put(f, "skills/web/deep/SKILL.md",
           "---\nname: Web Scraper\ndescription: Fetch and parse HTML pages\n---\n"
           "See [the guide](./references/guide.md \"title\") and [logo](assets/logo.svg).\n"
           "Not [this](https://example.com/x) nor [that](../../outside.md).\n");
    fx_put(f, "skills/web/deep/references/guide.md", "guide text\n");
    fx_put(f, "skills/web/deep/assets/logo.svg", "<svg/>\n");
    /* no name: the directory's name; id given */
    fx_put(f, "skills/plain/SKILL.md",
           "---\nid: plain-id\nversion: 2\n---\nJust instructions about spreadsheets.\n");
    fx_put(f, "outside.md", "workspace file outside any skill\n");
}

/* ---- front matter --------------------------------------------------------------------------- */

static void frontmatter_parses_like_gray_matter(void **state)
{
    (void)state;
    struct voltagent_skill_meta m;
    struct broker_err e = {0};
    const char *body;
    size_t bl;
    const char *t =
        "---\r\nname: 'quoted: yes'\r\ndescription: >\r\n  folded\r\n  text\r\nversion: 1.0\r\n"
        "id: 2024-01-01\r\ntags: solo\r\nassets: [\"a.png\", 3, '', ../up.png, ~/x, \"b\\\\c.png\"]\r\n"
        "---\r\n\r\n  Body here.  \r\n";
    assert_int_equal(voltagent_skills_frontmatter(t, strlen(t), &m, &body, &bl, &e), 0);
    assert_string_equal(m.name, "quoted: yes");
    assert_string_equal(m.description, "folded text\n");
    /* plain 1.0 is a number and 2024-01-01 a date to js-yaml: not strings */
    assert_null(m.version);
    assert_null(m.id);
    assert_int_equal(m.n_tags, 1);
    assert_string_equal(m.tags[0], "solo");
    /* numbers and empties dropped, ".." and '~' refused, backslashes read as slashes */
    assert_int_equal(m.n_assets, 2);
    assert_string_equal(m.assets[0], "a.png");
    assert_string_equal(m.assets[1], "b/c.png");
    assert_int_equal(bl, strlen("Body here."));
    assert_memory_equal(body, "Body here.", bl);
    voltagent_skills_meta_clear(&m);

    /* no front matter: all body */
    t = "# Title\nno matter\n";
    assert_int_equal(voltagent_skills_frontmatter(t, strlen(t), &m, &body, &bl, &e), 0);
    assert_null(m.name);
    assert_int_equal(bl, strlen(t) - 1);
    /* unterminated: everything is front matter, the body is empty */
    t = "---\nname: x\n";
    assert_int_equal(voltagent_skills_frontmatter(t, strlen(t), &m, &body, &bl, &e), 0);
    assert_string_equal(m.name, "x");
    assert_int_equal(bl, 0);
    voltagent_skills_meta_clear(&m);
    /* empty front matter */
    t = "---\n---\nbody";
    assert_int_equal(voltagent_skills_frontmatter(t, strlen(t), &m, &body, &bl, &e), 0);
    assert_null(m.name);
    /* bad YAML, a list instead of a mapping */
    t = "---\nname: [unclosed\n---\nbody";
    assert_int_equal(voltagent_skills_frontmatter(t, strlen(t), &m, &body, &bl, &e), -1);
    assert_int_equal(e.kind, BROKER_E_INVALID);
    assert_non_null(strstr(e.msg, "not valid YAML"));
    t = "---\n- a\n- b\n---\nbody";
    assert_int_equal(voltagent_skills_frontmatter(t, strlen(t), &m, &body, &bl, &e), -1);
    assert_non_null(strstr(e.msg, "mapping"));
    /* aliases are fine (not expanded beyond what is read) */
    t = "---\nx: &a [p.md, q.md]\nreferences: *a\n---\n";
    assert_int_equal(voltagent_skills_frontmatter(t, strlen(t), &m, &body, &bl, &e), 0);
    assert_int_equal(m.n_references, 2);
    voltagent_skills_meta_clear(&m);
}

/* ---- discovery and listing ------------------------------------------------------------------ */

static void lists_discovered_skills(void **state)
{
    struct fx *f = *state;
    expect_out(f, "workspace_list_skills", NULL, "No skills found.");
    skills_tree(f);
    /* discovered once per session; refresh finds the new ones */
    expect_out(f, "workspace_list_skills", NULL, "No skills found.");
    expect_out(f, "workspace_list_skills", "{\"refresh\":true}",
               "[inactive] /skills/pdf (PDF Tools) - Extract text and tables from PDF files\n"
               "[inactive] plain-id (plain)\n"
               "[inactive] /skills/web/deep (Web Scraper) - Fetch and parse HTML pages");
    cJSON *r = fx_ok(f, "workspace_list_skills", NULL);
    const cJSON *pdf = cJSON_GetArrayItem(fx_item(r, "skills"), 0);
    assert_string_equal(fx_str(pdf, "path"), "/skills/pdf/SKILL.md");
    assert_string_equal(fx_str(pdf, "version"), "1.2");
    assert_string_equal(cJSON_GetArrayItem(fx_item(pdf, "scripts"), 0)->valuestring,
                        "scripts/extract.py");
    cJSON_Delete(r);
    expect_out(f, "workspace_list_skills", "{\"active_only\":true}", "No skills found.");
}

static void broken_skill_is_passed_over_and_named(void **state)
{
    struct fx *f = *state;
    skills_tree(f);
    fx_put(f, "skills/bad/SKILL.md", "---\nname: [oops\n---\n");
    cJSON *r = fx_ok(f, "workspace_list_skills", NULL);
    assert_null(strstr(fx_str(r, "output"), "oops"));
    assert_int_equal(cJSON_GetArraySize(fx_item(r, "skills")), 3);
    const cJSON *p = fx_item(r, "problems");
    assert_non_null(strstr(cJSON_GetArrayItem(p, 0)->valuestring, "/skills/bad/SKILL.md"));
    cJSON_Delete(r);
}

/* ---- read, activate, deactivate ------------------------------------------------------------- */

static void read_skill_as_upstream(void **state)
{
    struct fx *f = *state;
    skills_tree(f);
    expect_out(f, "workspace_read_skill", "{\"skill_id\":\"pdf tools\"}",
               "Name: PDF Tools\nId: /skills/pdf\nDescription: Extract text and tables from PDF files\n"
               "Version: 1.2\nTags: pdf, documents\nPath: /skills/pdf/SKILL.md\n\nInstructions:\n"
               "# PDF\n\nUse scripts/extract.py to pull text out of a PDF.");
    expect_out(f, "workspace_read_skill", "{\"skill_id\":\"plain-id\"}",
               "Name: plain\nId: plain-id\nPath: /skills/plain/SKILL.md\n\nInstructions:\n"
               "Just instructions about spreadsheets.");
    expect_err(f, "workspace_read_skill", "{\"skill_id\":\"nope\"}", "not_found",
               "Skill not found: nope");
    expect_err(f, "workspace_read_skill", "{}", "invalid_argument", "skill_id is required");
}

static void activation_per_session(void **state)
{
    struct fx *f = *state;
    skills_tree(f);
    expect_out(f, "workspace_activate_skill", "{\"skill_id\":\"Web Scraper\"}",
               "Activated skill: Web Scraper (/skills/web/deep)");
    expect_out(f, "workspace_list_skills", "{\"active_only\":true}",
               "[active] /skills/web/deep (Web Scraper) - Fetch and parse HTML pages");
    /* another session does not see it */
    struct tool_session *mine = f->ctx.session, *other;
    assert_int_equal(tool_session_new(&other), 0);
    f->ctx.session = other;
    expect_out(f, "workspace_list_skills", "{\"active_only\":true}", "No skills found.");
    f->ctx.session = mine;
    tool_session_free(other);
    /* activation survives a refresh */
    expect_out(f, "workspace_list_skills", "{\"refresh\":true,\"active_only\":true}",
               "[active] /skills/web/deep (Web Scraper) - Fetch and parse HTML pages");
    expect_out(f, "workspace_deactivate_skill", "{\"skill_id\":\"/skills/web/deep\"}",
               "Deactivated skill: /skills/web/deep");
    /* not active any more: upstream's "Skill not found" */
    expect_err(f, "workspace_deactivate_skill", "{\"skill_id\":\"/skills/web/deep\"}", "not_found",
               "Skill not found: /skills/web/deep");
    expect_err(f, "workspace_activate_skill", "{\"skill_id\":\"  \"}", "not_found", NULL);
}

/* ---- allowlisted reads ---------------------------------------------------------------------- */

static void reads_only_listed_files(void **state)
{
    struct fx *f = *state;
    skills_tree(f);
    /* listed in the front matter: readable, by full entry or by its tail */
    expect_out(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"references/forms.md\"}",
               "How to fill PDF forms.\n");
    expect_out(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"forms.md\"}", "How to fill PDF forms.\n");
    expect_out(f, "workspace_read_skill_script",
               "{\"skill_id\":\"pdf tools\",\"script\":\"scripts/extract.py\"}", "print('extract')\n");
    /* inferred from the instructions' links (no lists in its front matter) */
    expect_out(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"Web Scraper\",\"reference\":\"references/guide.md\"}", "guide text\n");
    expect_out(f, "workspace_read_skill_asset",
               "{\"skill_id\":\"Web Scraper\",\"asset\":\"assets/logo.svg\"}", "<svg/>\n");
    /* everything else refused, naming what is allowed */
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"secret.txt\"}", VOLTAGENT_E_SKILL_FILE,
               "File not allowed for reference. Available: references/forms.md");
    expect_err(f, "workspace_read_skill_asset", "{\"skill_id\":\"/skills/pdf\",\"asset\":\"x.png\"}",
               VOLTAGENT_E_SKILL_FILE, "File not allowed for asset. Available: none");
    /* a script is not a reference */
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"scripts/extract.py\"}",
               VOLTAGENT_E_SKILL_FILE, NULL);
    /* escapes */
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"../pdf/references/forms.md\"}",
               VOLTAGENT_E_SKILL_FILE, NULL);
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"Web Scraper\",\"reference\":\"../../outside.md\"}",
               VOLTAGENT_E_SKILL_FILE, NULL);
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"Web Scraper\",\"reference\":\"outside.md\"}", VOLTAGENT_E_SKILL_FILE,
               NULL);
    /* a listed file that is missing */
    fx_put(f, "skills/gone/SKILL.md", "---\nname: gone\nreferences: [references/missing.md]\n---\n");
    cJSON_Delete(fx_ok(f, "workspace_list_skills", "{\"refresh\":true}"));
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"gone\",\"reference\":\"missing.md\"}", "not_found",
               "Error reading skill file: ");
    expect_err(f, "workspace_read_skill_script", "{\"skill_id\":\"nope\",\"script\":\"a\"}", "not_found",
               "Skill not found: nope");
}

/* The allowlist is the SKILL.md as it is now: an entry added later is readable, a removed one is
 * not, and a symlink planted in the skill's directory still cannot leave the workspace. */
static void allowlist_follows_the_file_and_containment_holds(void **state)
{
    struct fx *f = *state;
    skills_tree(f);
    cJSON_Delete(fx_ok(f, "workspace_list_skills", NULL));
    fx_put(f, "skills/pdf/SKILL.md",
           "---\nname: PDF Tools\nreferences: [secret.txt, link.md, "
           "/skills/web/deep/assets/logo.svg]\n---\n");
    expect_out(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"secret.txt\"}", "not listed anywhere\n");
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"forms.md\"}", VOLTAGENT_E_SKILL_FILE,
               NULL);
    /* an absolute entry outside the skill's own root is refused */
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"logo.svg\"}", VOLTAGENT_E_SKILL_FILE,
               NULL);
    char target[256], link[256];
    snprintf(target, sizeof(target), "%s/secret", f->out);
    FILE *fp = fopen(target, "w");
    fputs("host secret\n", fp);
    fclose(fp);
    snprintf(link, sizeof(link), "%s/skills/pdf/link.md", f->ws);
    assert_int_equal(symlink(target, link), 0);
    expect_err(f, "workspace_read_skill_reference",
               "{\"skill_id\":\"/skills/pdf\",\"reference\":\"link.md\"}", "denied",
               "Error reading skill file: ");
}

/* ---- search --------------------------------------------------------------------------------- */

static void search_skills(void **state)
{
    struct fx *f = *state;
    skills_tree(f);
    cJSON *r = fx_ok(f, "workspace_search_skills", "{\"query\":\"pdf tables\",\"mode\":\"bm25\"}");
    const char *out = fx_str(r, "output");
    assert_true(!strncmp(out, "Found 1 result(s):\n1. PDF Tools (/skills/pdf) (score=", 52));
    const cJSON *top = cJSON_GetArrayItem(fx_item(r, "results"), 0);
    /* bm25 mode: raw scores, as upstream's skills search */
    assert_true(fx_num(top, "score") > 1.0);
    assert_true(fx_num(top, "score") == fx_num(top, "bm25Score"));
    cJSON_Delete(r);
    r = fx_ok(f, "workspace_search_skills", "{\"query\":\"scraping webpages\",\"mode\":\"vector\"}");
    top = cJSON_GetArrayItem(fx_item(r, "results"), 0);
    assert_string_equal(fx_str(top, "id"), "/skills/web/deep");
    cJSON_Delete(r);
    r = fx_ok(f, "workspace_search_skills", "{\"query\":\"spreadsheets\"}");
    top = cJSON_GetArrayItem(fx_item(r, "results"), 0);
    assert_string_equal(fx_str(top, "id"), "plain-id");
    assert_string_equal(fx_str(top, "name"), "plain");
    cJSON_Delete(r);
    expect_out(f, "workspace_search_skills", "{\"query\":\"zzzz\",\"mode\":\"bm25\"}",
               "No results found.");
    expect_err(f, "workspace_search_skills", "{\"query\":\"x\",\"mode\":\"semantic\"}",
               "invalid_argument", NULL);
}

static void listed_and_refused_without_session(void **state)
{
    struct fx *f = *state;
    cJSON *arr = cJSON_CreateArray();
    assert_int_equal(voltagent_skills_list(&f->ctx, arr), 0);
    const char *names[] = {"workspace_list_skills",       "workspace_search_skills",
                           "workspace_read_skill",        "workspace_activate_skill",
                           "workspace_deactivate_skill",  "workspace_read_skill_reference",
                           "workspace_read_skill_script", "workspace_read_skill_asset"};
    assert_int_equal(cJSON_GetArraySize(arr), ARRAY_SIZE(names));
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        assert_string_equal(fx_str(cJSON_GetArrayItem(arr, (int)i), "name"), names[i]);
    cJSON_Delete(arr);
    struct tool_session *s = f->ctx.session;
    f->ctx.session = NULL;
    expect_err(f, "workspace_list_skills", NULL, "io_error", "session");
    f->ctx.session = s;
    /* the denial rule for the allowlist refusal */
    cJSON *e = voltagent_error_text(VOLTAGENT_E_SKILL_FILE, "x");
    assert_non_null(f->s->denial(e));
    cJSON_Delete(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        VT(frontmatter_parses_like_gray_matter),
        VT(lists_discovered_skills),
        VT(broken_skill_is_passed_over_and_named),
        VT(read_skill_as_upstream),
        VT(activation_per_session),
        VT(reads_only_listed_files),
        VT(allowlist_follows_the_file_and_containment_holds),
        VT(search_skills),
        VT(listed_and_refused_without_session),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
