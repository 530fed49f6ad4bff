/* supervisor/report/html.c: the page around the parts: head with its Content-Security-Policy,
 * the summary and verification, the workspace tree with budgets, denials by rule, network
 * connections, entry counts. Every string of the trail goes through text.c's escaping. */
#include "supervisor/report/internal.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

static void put_time(FILE *f, int64_t ts)
{
    char buf[40];
    trail_format_time(ts, buf, sizeof(buf));
    report_put_text(f, buf);
}

/* ---- parts ----------------------------------------------------------------------------------- */

static void dt(FILE *f, const char *term)
{
    report_putf(f, "<dt>%s</dt><dd>", term);
}

static void summary(FILE *f, const struct report_model *m)
{
    if (m->verify_rc == 0) {
        report_putf(f,
                    "<div class=\"banner ok\" id=\"verify\">trail verify: ok, %llu entries verified; "
                    "head %llu <span class=\"id\">",
                    (unsigned long long)m->entries, (unsigned long long)m->head_seq);
        report_put_text(f, m->head_hex);
        report_putf(f, "</span></div>\n");
    } else {
        report_putf(f, "<div class=\"banner bad\" id=\"verify\">trail verify FAILED: ");
        report_put_text(f, m->verify_msg);
        report_putf(f, ". This record has been changed or damaged");
        if (m->verify_bad_seq)
            report_putf(f, " at entry %llu", (unsigned long long)m->verify_bad_seq);
        report_putf(f, ": what follows may not be what happened.</div>\n");
    }
    report_putf(f, "<section id=\"summary\"><h2>Run</h2><dl class=\"summary\">\n");
    dt(f, "policy");
    report_put_text(f, m->policy
                           ? m->policy
                           : (m->command ? "(none: corral exec's embedded default, or not recorded)"
                                         : "(not recorded)"));
    report_putf(f, "</dd>\n");
    dt(f, "owner");
    report_put_text(f, m->owner ? m->owner
                                : (m->nws && m->ws[0].owner ? m->ws[0].owner : "(not recorded)"));
    report_putf(f, "</dd>\n");
    dt(f, "command");
    report_put_text(f, m->command ? m->command : "(not recorded)");
    report_putf(f, "</dd>\n");
    dt(f, "start");
    if (m->entries)
        put_time(f, m->start_ts);
    report_putf(f, "</dd>\n");
    dt(f, "end");
    if (m->entries) {
        char d[32];
        put_time(f, m->end_ts);
        report_fmt_duration_us(m->end_ts - m->start_ts, d, sizeof(d));
        report_putf(f, " (%s after the start; the last entry)", d);
    }
    report_putf(f, "</dd>\n");
    dt(f, "outcome");
    if (m->stop_text) {
        report_put_text(f, m->stop_text);
        report_putf(f, "; ");
    }
    /* the workspaces' final states say how the run ended when the supervisor did not */
    {
        struct {
            const char *state;
            size_t n;
        } st[16];
        size_t ns = 0, failed = 0;
        for (size_t i = 0; i < m->nws; i++) {
            const char *s = m->ws[i].state ? m->ws[i].state : m->ws[i].exit_text ? "exited" : "unknown";
            size_t j = 0;
            while (j < ns && strcmp(st[j].state, s))
                j++;
            if (j == ns && ns < ARRAY_SIZE(st))
                st[ns++] = (typeof(st[0])){s, 0};
            if (j < ns)
                st[j].n++;
            failed += !strcmp(s, "failed") || !strcmp(s, "aborted");
        }
        report_putf(f, "%zu workspace%s", m->nws, m->nws == 1 ? "" : "s");
        for (size_t j = 0; j < ns; j++) {
            report_putf(f, "%s%zu ", j ? ", " : ": ", st[j].n);
            report_put_text(f, st[j].state);
        }
        size_t done = 0;
        for (size_t i = 0; i < m->ntasks; i++)
            done += m->tasks[i].status && (!strcmp(m->tasks[i].status, "integrated") ||
                                           !strcmp(m->tasks[i].status, "completed"));
        if (m->ntasks)
            report_putf(f, "; %zu of %zu task%s completed or integrated", done, m->ntasks,
                        m->ntasks == 1 ? "" : "s");
        report_putf(f, "; %llu denial%s%s", (unsigned long long)m->denials, m->denials == 1 ? "" : "s",
                    failed ? "; some workspaces failed" : "");
    }
    report_putf(f, "</dd>\n");
    dt(f, "trail");
    report_put_text(f, m->db);
    report_putf(f, " (id <span class=\"id\">");
    report_put_text(f, m->trail_id ? m->trail_id : "?");
    report_putf(f, "</span>, %llu entries, durability ", (unsigned long long)m->entries);
    report_put_text(f, m->durability ? m->durability : "?");
    report_putf(f, ")</dd>\n");
    dt(f, "trail verify");
    if (m->verify_rc == 0)
        report_putf(f, "ok: %llu entries verified", (unsigned long long)m->entries);
    else {
        report_putf(f, "bad: ");
        report_put_text(f, m->verify_msg);
    }
    report_putf(f, "</dd>\n");
    dt(f, "head hash");
    if (m->head_seq) {
        report_putf(f, "%llu <span class=\"id\">", (unsigned long long)m->head_seq);
        report_put_text(f, m->head_hex);
        report_putf(f,
                    "</span> (keep it elsewhere: <code>corral trail verify --anchor %llu:HASH</code> "
                    "proves the trail "
                    "was not cut short or rewritten up to it)",
                    (unsigned long long)m->head_seq);
    } else {
        report_putf(f, "(none: the trail did not verify)");
    }
    report_putf(f, "</dd>\n</dl></section>\n");
}

/* A budget used against granted: numbers, and a small bar when both are known. */
static void meter(FILE *f, double used, double limit, bool bytes, const char *unit)
{
    char u[32] = "?", l[32] = "";
    if (used >= 0) {
        if (bytes)
            report_fmt_bytes(used, u, sizeof(u));
        else
            snprintf(u, sizeof(u), "%.3g%s", used, unit);
    }
    if (limit >= 0) {
        if (bytes)
            report_fmt_bytes(limit, l, sizeof(l));
        else
            snprintf(l, sizeof(l), "%.3g%s", limit, unit);
    }
    report_putf(f, "%s%s%s", u, limit >= 0 ? " / " : "", l);
    if (used >= 0 && limit > 0) {
        double r = used / limit;
        int w = (int)(60 * (r > 1 ? 1 : r));
        report_putf(f,
                    "<br><svg class=\"meter\" width=\"60\" height=\"6\"><rect class=\"bg\" width=\"60\" "
                    "height=\"6\"/>"
                    "<rect class=\"fill%s\" width=\"%d\" height=\"6\"/><title>%.0f%%</title></svg>",
                    r >= 1     ? " over"
                    : r >= 0.8 ? " hot"
                               : "",
                    w < 1 ? 1 : w, 100 * r);
    }
}

static void tree(FILE *f, const struct report_model *m)
{
    report_putf(f, "<section id=\"tree\"><h2>Workspaces</h2>\n");
    if (!m->nws) {
        report_putf(f, "<p class=\"note\">No workspaces in this trail.</p></section>\n");
        return;
    }
    report_putf(f, "<table "
                   "class=\"tree\"><thead><tr><th>workspace</th><th>agent</th><th>role</th><th>state</"
                   "th><th>task</th>"
                   "<th>memory peak / granted</th><th>CPU time</th><th>wall time / "
                   "granted</th><th>pids</th><th>CPUs</th>"
                   "<th>tool calls</th><th>checkpoints</th><th>denials</th><th>budget warnings / "
                   "exceeded</th><th>end</th></tr></thead><tbody>\n");
    for (size_t o = 0; o < m->nws; o++) {
        const struct report_ws *w = &m->ws[m->lane_order[o]];
        report_putf(f, "<tr class=\"ws\"><td class=\"d%zu\"><span class=\"id\">",
                    w->depth > 8 ? (size_t)8 : w->depth);
        report_put_text(f, w->id);
        report_putf(f, "</span></td><td>");
        report_put_text(f, w->agent ? w->agent : "?");
        report_putf(f, "</td><td>");
        report_put_text(f, w->role ? w->role : "");
        /* the state is also a class: only ours, a closed set, never the trail's text */
        static const char *const known[] = {"closed", "failed", "aborted", "active", "idle"};
        const char *cls = "";
        for (size_t k = 0; k < ARRAY_SIZE(known); k++)
            if (w->state && !strcmp(w->state, known[k]))
                cls = known[k];
        report_putf(f, "</td><td><span class=\"state %s\">", cls);
        report_put_text(f, w->state ? w->state : w->exit_text ? "exited" : "unknown");
        report_putf(f, "</span></td><td>");
        size_t t = report_map_get(&m->task_ids, w->task);
        report_put_text(f,
                        t != SIZE_MAX && m->tasks[t].name ? m->tasks[t].name : (w->task ? w->task : ""));
        report_putf(f, "</td><td>");
        meter(f, w->mem_peak, w->mem_limit, true, "");
        report_putf(f, "</td><td>");
        if (w->cpu_sec >= 0)
            report_putf(f, "%.3g s", w->cpu_sec);
        report_putf(f, "</td><td>");
        meter(f, w->wall_sec, w->wall_limit, false, " s");
        report_putf(f, "</td><td>");
        if (w->pids_limit >= 0)
            report_putf(f, "max %.0f", w->pids_limit);
        report_putf(f, "</td><td>");
        if (w->cpus_limit >= 0)
            report_putf(f, "%.3g", w->cpus_limit);
        report_putf(f, "</td><td>%u</td><td>%u</td><td>%u</td><td>%u / %u</td><td>", w->tool_calls,
                    w->checkpoints, w->denials, w->warnings, w->exceeded);
        report_put_text(f, w->exit_text ? w->exit_text : (w->started_us >= 0 ? "no end recorded" : ""));
        report_putf(f, "</td></tr>\n");
        if (w->log) {
            report_putf(f,
                        "<tr class=\"log\"><td colspan=\"15\" class=\"d%zu\"><details><summary>stderr "
                        "log (%zu bytes%s)</summary><pre class=\"log\">",
                        w->depth > 8 ? (size_t)8 : w->depth, w->log_bytes,
                        w->log_cut ? ", the end shown" : "");
            report_put_text(f, w->log);
            report_putf(f, "</pre></details></td></tr>\n");
        }
    }
    report_putf(f, "</tbody></table>\n");
    if (m->ws_dropped)
        report_putf(f, "<p class=\"note\">%zu more workspaces are not shown (at most %d).</p>\n",
                    m->ws_dropped, REPORT_WS_MAX);
    report_putf(f, "</section>\n");
}

static void denials(FILE *f, const struct report_model *m)
{
    report_putf(f, "<section id=\"denials\"><h2>Denials by rule</h2>\n");
    if (!m->nrules) {
        report_putf(f, "<p class=\"note\">Nothing was refused in this run.</p></section>\n");
        return;
    }
    report_putf(f,
                "<p>%llu denial%s under %zu rule%s.</p>\n<table "
                "class=\"denials\"><thead><tr><th>rule</th><th>count</th>"
                "<th>kinds</th><th>examples (entry, workspace, what, why)</th></tr></thead><tbody>\n",
                (unsigned long long)m->denials, m->denials == 1 ? "" : "s", m->nrules,
                m->nrules == 1 ? "" : "s");
    for (size_t i = 0; i < m->nrules; i++) {
        const struct report_rule *r = &m->rules[i];
        report_putf(f, "<tr><td>");
        report_put_text(f, r->rule);
        report_putf(f, "</td><td>%llu</td><td>", (unsigned long long)r->count);
        report_put_text(f, r->kinds);
        report_putf(f, "</td><td>");
        for (size_t j = 0; j < r->nexamples; j++) {
            const struct report_example *x = &r->examples[j];
            report_putf(f, "<div>%llu <span class=\"id\">", (unsigned long long)x->seq);
            report_put_text(f, x->workspace);
            report_putf(f, "</span> <code>");
            report_put_text(f, x->subject);
            report_putf(f, "</code> ");
            report_put_text(f, x->reason);
            report_putf(f, "</div>");
        }
        if (r->count > r->nexamples)
            report_putf(f, "<div class=\"note\">and %llu more</div>",
                        (unsigned long long)(r->count - r->nexamples));
        report_putf(f, "</td></tr>\n");
    }
    report_putf(f, "</tbody></table></section>\n");
}

static void network(FILE *f, const struct report_model *m)
{
    report_putf(f, "<section id=\"network\"><h2>Network connections</h2>\n");
    if (!m->nnet) {
        report_putf(
            f,
            "<p class=\"note\">No network connections recorded (no <code>network_connect</code> "
            "entries: "
            "the run's sandboxes had no egress, or it is not recorded by this corral).</p></section>\n");
        return;
    }
    report_putf(f, "<table "
                   "class=\"net\"><thead><tr><th>entry</th><th>time</th><th>workspace</"
                   "th><th>connection</th><th>body</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < m->nnet; i++) {
        const struct report_net *n = &m->net[i];
        char when[32];
        report_fmt_duration_us(n->t_us, when, sizeof(when));
        report_putf(f, "<tr><td>%llu</td><td>+%s</td><td class=\"id\">", (unsigned long long)n->seq,
                    when);
        report_put_text(f, n->workspace);
        report_putf(f, "</td><td>");
        report_put_text(f, n->summary);
        report_putf(f, "</td><td><code>");
        report_put_text(f, n->body);
        report_putf(f, "</code></td></tr>\n");
    }
    report_putf(f, "</tbody></table>\n");
    if (m->net_dropped)
        report_putf(f, "<p class=\"note\">%llu more connections are in the trail.</p>\n",
                    (unsigned long long)m->net_dropped);
    report_putf(f, "</section>\n");
}

static void counts(FILE *f, const struct report_model *m)
{
    report_putf(f,
                "<section id=\"counts\"><h2>Entries by type</h2><details><summary>%llu entries, %zu "
                "types</summary>"
                "<table><tbody>\n",
                (unsigned long long)m->entries, m->ncounts);
    for (size_t i = 0; i < m->ncounts; i++) {
        report_putf(f, "<tr><td>");
        report_put_text(f, m->counts[i].type);
        report_putf(f, "</td><td>%llu</td></tr>\n", (unsigned long long)m->counts[i].n);
    }
    report_putf(f, "</tbody></table></details></section>\n");
}

int report_write(const char *db, FILE *out, struct cerr *err)
{
    struct report_model m = {.db = db};
    int rc = report_model_load(&m, err);
    if (rc < 0) {
        report_model_free(&m);
        return rc;
    }
    char css_hash[64], js_hash[64];
    report_csp_hash(report_css, css_hash);
    report_csp_hash(report_js, js_hash);
    /* default-src 'none': no fetch, image, font, frame or connection of any kind; the one style
     * sheet and the one script only by their hashes, so an element that escaped escaping could
     * still not run, load or style anything. */
    report_putf(out,
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
                "%s; script-src %s; "
                "img-src 'none'; base-uri 'none'; form-action 'none'\">\n"
                "<meta name=\"referrer\" content=\"no-referrer\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, "
                "initial-scale=1\">\n<title>corral run report: ",
                css_hash, js_hash);
    report_put_text(out, m.trail_id ? m.trail_id : db);
    report_putf(out,
                "</title>\n<style>%s</style>\n</head>\n<body>\n<header><h1>corral run report</h1><div "
                "class=\"sub\">",
                report_css);
    report_put_text(out, db);
    char now[40];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    trail_format_time((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, now, sizeof(now));
    report_putf(out, " &middot; made %s by corral trail report</div></header>\n<main>\n", now);
    summary(out, &m);
    tree(out, &m);
    report_graph_write(out, &m);
    report_timeline_write(out, &m);
    denials(out, &m);
    network(out, &m);
    counts(out, &m);
    report_putf(
        out,
        "</main>\n<footer>Everything on this page comes from the trail; text an agent wrote is shown as "
        "text. "
        "The page loads nothing and needs no network.</footer>\n<script>%s</script>\n</body></html>\n",
        report_js);
    report_model_free(&m);
    if (fflush(out) != 0 || ferror(out))
        return cerr_set(err, EIO, "cannot write the report: %s", strerror(errno));
    return 0;
}
