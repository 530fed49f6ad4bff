/* supervisor/report/graph.c: the task graph as a picture: tasks as nodes (name, status, the
 * workspace that did it), depends_on and parent tasks as edges, laid out by Graphviz's dot and
 * rendered to SVG in-process (libgvc, libcgraph): a well-kept layout, not one written here.
 * Graphviz is loaded (dlopen) when a report is made, not linked: its dozen libraries would
 * otherwise be resolved at every start of every corral command, sandboxes included.
 * Task names are an agent's text: they go to Graphviz as labels with its escapes neutralised,
 * Graphviz escapes them for XML, and the SVG it gives back is checked before it is inlined. */
#include "supervisor/report/internal.h"

#include <ctype.h>
#include <dlfcn.h>
#include <string.h>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

/* A label Graphviz shows as given: its escString reads \N \G \E \T \H \L \n \l \r, and its XML
 * writer keeps what looks like an entity (&lt;) as one, so backslash and & are escaped. */
static char *gv_label(const char *s, size_t max)
{
    _cleanup_free_ char *clean = report_clean_utf8(s ? s : "", s ? strlen(s) : 0, max);
    if (!clean)
        return NULL;
    size_t n = 0;
    for (const char *p = clean; *p; p++)
        n += *p == '\\' ? 2 : *p == '&' ? 5 : *p == '\n' ? 2 : 1;
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *p = clean; *p; p++) {
        if (*p == '\\')
            *o++ = '\\', *o++ = '\\';
        else if (*p == '&')
            memcpy(o, "&amp;", 5), o += 5;
        else if (*p == '\n' || *p == '\t')
            *o++ = ' ';
        else
            *o++ = *p;
    }
    *o = '\0';
    return out;
}

/* The Debian libraries' SONAMEs (libgvc6, libcgraph6; the package depends on them). */
#define GV_LIB_GVC "libgvc.so.6"
#define GV_LIB_CGRAPH "libcgraph.so.6"

/* The Graphviz calls the report makes, typed from Graphviz's own headers. */
struct gv_api {
    __typeof__(gvContext) *context;
    __typeof__(gvFreeContext) *free_context;
    __typeof__(gvLayout) *layout;
    __typeof__(gvFreeLayout) *free_layout;
    __typeof__(gvRenderData) *render_data;
    __typeof__(gvFreeRenderData) *free_render_data;
    __typeof__(agopen) *open;
    __typeof__(agclose) *close;
    __typeof__(agnode) *node;
    __typeof__(agedge) *edge;
    __typeof__(agsafeset) *safeset;
    __typeof__(agattr) *attr;
    __typeof__(agseterr) *seterr;
    Agdesc_t *directed;
};

/* Loads Graphviz once (it stays loaded for the process: the CLI exits after one report).
 * NULL, with why in why, when it is not installed. */
static const struct gv_api *gv_load(char *why, size_t cap)
{
    static struct gv_api api;
    static bool loaded;
    if (loaded)
        return &api;
    void *gvc = dlopen(GV_LIB_GVC, RTLD_NOW | RTLD_LOCAL);
    void *cg = gvc ? dlopen(GV_LIB_CGRAPH, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!gvc || !cg) {
        snprintf(why, cap, "Graphviz is not installed (%s): apt-get install libgvc6", dlerror());
        return NULL;
    }
    struct {
        void *lib;
        const char *name;
        void **slot;
    } syms[] = {
        {gvc, "gvContext", (void **)&api.context},
        {gvc, "gvFreeContext", (void **)&api.free_context},
        {gvc, "gvLayout", (void **)&api.layout},
        {gvc, "gvFreeLayout", (void **)&api.free_layout},
        {gvc, "gvRenderData", (void **)&api.render_data},
        {gvc, "gvFreeRenderData", (void **)&api.free_render_data},
        {cg, "agopen", (void **)&api.open},
        {cg, "agclose", (void **)&api.close},
        {cg, "agnode", (void **)&api.node},
        {cg, "agedge", (void **)&api.edge},
        {cg, "agsafeset", (void **)&api.safeset},
        {cg, "agattr", (void **)&api.attr},
        {cg, "agseterr", (void **)&api.seterr},
        {cg, "Agdirected", (void **)&api.directed},
    };
    for (size_t i = 0; i < ARRAY_SIZE(syms); i++)
        if (!(*syms[i].slot = dlsym(syms[i].lib, syms[i].name))) {
            snprintf(why, cap, "Graphviz (%s) lacks %s", GV_LIB_GVC, syms[i].name);
            return NULL;
        }
    loaded = true;
    return &api;
}

static const char *status_colour(const char *st)
{
    static const struct {
        const char *status, *colour;
    } map[] = {
        {"integrated", "#b7e4c7"}, {"completed", "#d8f3dc"}, {"in_progress", "#ffe8a3"},
        {"assigned", "#fff3c4"},   {"failed", "#f8c4c4"},    {"cancelled", "#e0e0e0"},
        {"pending", "#e8eefc"},    {"draft", "#f2f2f2"},
    };
    for (size_t i = 0; st && i < ARRAY_SIZE(map); i++)
        if (!strcmp(st, map[i].status))
            return map[i].colour;
    return "#ffffff";
}

/* Graphviz's SVG is inlined only if its markup holds nothing that could run or load: it never
 * should (every label is escaped on the way out), and this keeps it so whatever a later Graphviz
 * does. Only the insides of tags are looked at: text between them is the labels, escaped. */
bool report_svg_inert(const char *svg, size_t len)
{
    static const char *const bad[] = {
        "script", "foreignobject", "href", "javascript:", "iframe",   "<image",
        "<use",   "style",         "<a ",  "<a>",         "<!entity", "<?"};
    if (memchr(svg, '\0', len))
        return false;
    char tag[1024];
    size_t t = 0;
    bool in = false;
    for (size_t i = 0; i < len; i++) {
        char c = (char)tolower((unsigned char)svg[i]);
        if (!in && c == '<')
            in = true, t = 0;
        if (!in)
            continue;
        if (t < sizeof(tag) - 1)
            tag[t++] = c == '\n' || c == '\t' ? ' ' : c;
        if (c != '>')
            continue;
        in = false;
        tag[t] = '\0';
        for (size_t k = 0; k < ARRAY_SIZE(bad); k++)
            if (strstr(tag, bad[k]))
                return false;
        /* an attribute named on...= */
        for (const char *p = strstr(tag, " on"); p; p = strstr(p + 1, " on")) {
            const char *q = p + 3;
            while (isalpha((unsigned char)*q))
                q++;
            if (*q == '=' && q > p + 3)
                return false;
        }
    }
    return !in;
}

static void note(FILE *f, const char *text)
{
    report_putf(f, "<p class=\"note\">");
    report_put_text(f, text);
    report_putf(f, "</p>\n");
}

void report_graph_write(FILE *f, const struct report_model *m)
{
    report_putf(f, "<section id=\"graph\"><h2>Task graph</h2>\n");
    if (m->ntasks == 0) {
        note(f, "No tasks were created in this run.");
        report_putf(f, "</section>\n");
        return;
    }
    char why[300] = "";
    const struct gv_api *gv = gv_load(why, sizeof(why));
    if (!gv) {
        char msg[400];
        snprintf(msg, sizeof(msg), "No picture of the task graph: %s. The tasks are listed below.", why);
        note(f, msg);
    }
    if (gv)
        gv->seterr(AGMAX); /* Graphviz's warnings would go to our stderr; the picture is all we need */
    GVC_t *gvc = gv ? gv->context() : NULL;
    Agraph_t *g = gvc ? gv->open("tasks", *gv->directed, NULL) : NULL;
    char *svg = NULL;
    unsigned int len = 0;
    bool laid = false;
    if (!g)
        goto out;
    gv->safeset(g, "rankdir", "LR", "");
    gv->safeset(g, "nodesep", "0.3", "");
    gv->safeset(g, "ranksep", "0.5", "");
    gv->safeset(g, "bgcolor", "transparent", "");
    gv->attr(g, AGNODE, "shape", "box");
    gv->attr(g, AGNODE, "style", "rounded,filled");
    gv->attr(g, AGNODE, "fontname", "Helvetica");
    gv->attr(g, AGNODE, "fontsize", "11");
    gv->attr(g, AGNODE, "fillcolor", "#ffffff");
    gv->attr(g, AGNODE, "label", "");
    gv->attr(g, AGEDGE, "style", "solid");
    gv->attr(g, AGEDGE, "color", "#555555");
    Agnode_t **nodes = calloc(m->ntasks, sizeof(*nodes));
    if (!nodes)
        goto out;
    for (size_t i = 0; i < m->ntasks; i++) {
        const struct report_task *t = &m->tasks[i];
        char name[32];
        snprintf(name, sizeof(name), "t%zu", i); /* our own names: never the agent's text */
        nodes[i] = gv->node(g, name, 1);
        const char *agent = NULL;
        size_t w = report_map_get(&m->ws_ids, t->workspace);
        if (w != SIZE_MAX)
            agent = m->ws[w].agent;
        _cleanup_free_ char *l1 = gv_label(t->name ? t->name : t->id, 60);
        _cleanup_free_ char *l2 = gv_label(t->status ? t->status : "?", 30);
        _cleanup_free_ char *l3 = gv_label(
            agent ? agent : (t->workspace ? t->workspace : "not assigned"), 40);
        _cleanup_free_ char *label = l1 && l2 && l3 ? util_printf("%s\\n%s\\n%s", l1, l2, l3) : NULL;
        if (nodes[i] && label) {
            gv->safeset(nodes[i], "label", label, "");
            gv->safeset(nodes[i], "fillcolor", (char *)status_colour(t->status), "#ffffff");
        }
    }
    for (size_t i = 0; i < m->ntasks; i++) {
        const struct report_task *t = &m->tasks[i];
        for (size_t j = 0; j < t->ndeps; j++) {
            size_t d = report_map_get(&m->task_ids, t->deps[j]);
            if (d != SIZE_MAX && nodes[d] && nodes[i])
                gv->edge(g, nodes[d], nodes[i], NULL, 1);
        }
        size_t p = report_map_get(&m->task_ids, t->parent);
        if (p != SIZE_MAX && p != i && nodes[p] && nodes[i]) {
            Agedge_t *e = gv->edge(g, nodes[p], nodes[i], NULL, 1);
            if (e)
                gv->safeset(e, "style", "dashed", "solid");
        }
    }
    free(nodes);
    if (gv->layout(gvc, g, "dot") != 0)
        goto out;
    laid = true;
    if (gv->render_data(gvc, g, "svg", &svg, &len) != 0)
        svg = NULL;
out:
    if (svg) {
        /* from <svg on: the XML declaration, DOCTYPE and comments before it are not for HTML */
        char *start = strstr(svg, "<svg");
        size_t n = start ? len - (size_t)(start - svg) : 0;
        if (start && report_svg_inert(start, n)) {
            report_putf(f, "<div class=\"graph\">");
            fwrite(start, 1, n, f);
            report_putf(f, "</div>\n");
        } else {
            note(f, "The task graph's picture was left out: Graphviz gave an SVG that was not plainly "
                    "inert.");
        }
        gv->free_render_data(svg);
    } else if (gv) {
        note(f, "The task graph could not be laid out (Graphviz failed); the tasks are listed below.");
    }
    if (laid)
        gv->free_layout(gvc, g);
    if (g)
        gv->close(g);
    if (gvc)
        gv->free_context(gvc);
    if (m->tasks_dropped) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%llu more tasks are not shown (the graph shows the first %d).",
                 (unsigned long long)m->tasks_dropped, REPORT_TASKS_MAX);
        note(f, msg);
    }
    /* the same tasks as text: searchable, and readable where SVG is not */
    report_putf(
        f,
        "<details><summary>Tasks as a table (%zu)</summary><table "
        "class=\"tasks\"><thead><tr><th>task</th>"
        "<th>status</th><th>workspace</th><th>depends on</th><th>description</th></tr></thead><tbody>\n",
        m->ntasks);
    for (size_t i = 0; i < m->ntasks; i++) {
        const struct report_task *t = &m->tasks[i];
        report_putf(f, "<tr><td>");
        report_put_text(f, t->name ? t->name : "");
        report_putf(f, "<br><span class=\"id\">");
        report_put_text(f, t->id);
        report_putf(f, "</span></td><td>");
        report_put_text(f, t->status ? t->status : "");
        report_putf(f, "</td><td class=\"id\">");
        report_put_text(f, t->workspace ? t->workspace : "");
        report_putf(f, "</td><td>");
        for (size_t j = 0; j < t->ndeps; j++) {
            size_t d = report_map_get(&m->task_ids, t->deps[j]);
            if (j)
                report_putf(f, ", ");
            report_put_text(f, d != SIZE_MAX && m->tasks[d].name ? m->tasks[d].name : t->deps[j]);
        }
        report_putf(f, "</td><td>");
        report_put_text(f, t->description ? t->description : "");
        report_putf(f, "</td></tr>\n");
    }
    report_putf(f, "</tbody></table></details>\n</section>\n");
}

/* Under LeakSanitizer (make SAN=1): Graphviz, and the fontconfig its text layout plugin loads,
 * keep one-time caches for the life of the process and never free them. They are theirs, not
 * ours; this hook (read only by a sanitizer runtime) keeps them out of the leak report. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_options(void);
const char *__lsan_default_options(void)
{
    return "print_suppressions=0";
}
const char *__lsan_default_suppressions(void)
{
    return "leak:libgvc.so\nleak:libcgraph.so\nleak:libfontconfig.so\nleak:libpango\nleak:"
           "libcairo\nleak:libgvplugin\n";
}
