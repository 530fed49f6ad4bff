/* supervisor/report/timeline.c: the timeline, one lane per workspace (and one for the system):
 * processes and tool calls as bars from start to end, every other entry as a tick. Each mark
 * carries its time (data-t, data-d, run-relative microseconds), a header and its body as
 * escaped attributes; the page's script only moves marks when zooming and copies those
 * attributes into the detail panel as text. Laid out here at zoom 1, so it reads without the
 * script too (titles give the hover text). */
#include "supervisor/report/internal.h"

#include <string.h>

#define TL_WIDTH 1200 /* px of the run at zoom 1 */
#define TL_PAD 8
#define TL_AXIS 22
#define TL_ROW 22
#define TL_LABEL_W 280

static double xpos(int64_t t, int64_t span)
{
    return TL_PAD + (double)t / (double)span * TL_WIDTH;
}

static void lane_label(FILE *f, const struct report_model *m, size_t lane, double y)
{
    report_putf(f, "<text x=\"4\" y=\"%.1f\" class=\"lane-label\">", y + 15);
    if (lane == 0) {
        report_putf(f, "system</text>\n");
        return;
    }
    const struct report_ws *w = &m->ws[lane - 1];
    report_putf(f, "<tspan class=\"indent\">");
    for (size_t d = 0; d < w->depth && d < 8; d++)
        report_putf(f, "\xc2\xa0\xc2\xa0");
    report_putf(f, "</tspan>");
    report_put_text(f, w->agent ? w->agent : "?");
    report_putf(f, " <tspan class=\"id\">");
    /* ws-<32 hex> ids: the first 8 hex digits tell lanes apart; the tree has the whole id */
    char shortid[16];
    snprintf(shortid, sizeof(shortid), "%.11s", w->id ? w->id : "");
    report_put_text(f, shortid);
    report_putf(f, "</tspan><title>");
    report_put_text(f, w->id ? w->id : "");
    report_putf(f, "</title></text>\n");
}

static void mark(FILE *f, const struct report_model *m, const struct report_mark *k, double y,
                 int64_t span)
{
    const char *ws = k->lane ? m->ws[k->lane - 1].id : "system";
    double x = xpos(k->t_us, span);
    double w = (double)k->dur_us / (double)span * TL_WIDTH;
    bool bar = k->kind == REPORT_KIND_PROCESS && (k->dur_us > 0 || k->open);
    if (k->open) /* still running when the trail ends */
        w = xpos(m->end_ts - m->start_ts, span) - x;
    if (w < 3)
        w = 3;
    char when[32];
    report_fmt_duration_us(k->t_us, when, sizeof(when));
    char dur[32] = "";
    if (k->dur_us > 0)
        report_fmt_duration_us(k->dur_us, dur, sizeof(dur));
    report_putf(f,
                "<rect class=\"m k-%s%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                "data-t=\"%lld\" data-d=\"%lld\" data-h=\"",
                report_kind_names[k->kind], bar ? " bar" : "", x, bar ? y + 2 : y + 4, w,
                bar ? TL_ROW - 4 : TL_ROW - 8, (long long)k->t_us,
                (long long)(k->open ? m->end_ts - m->start_ts - k->t_us : k->dur_us));
    report_putf(f, "entry %llu at +%s%s%s%s in ", (unsigned long long)k->seq, when,
                dur[0] ? ", lasting " : "", dur, k->open ? ", no end recorded" : "");
    report_put_text(f, ws);
    report_putf(f, ": ");
    report_put_text(f, k->label);
    report_putf(f, "\" data-b=\"");
    report_put_text(f, k->body);
    report_putf(f, "\"><title>");
    report_put_text(f, k->label);
    report_putf(f, " (+%s)</title></rect>\n", when);
}

void report_timeline_write(FILE *f, const struct report_model *m)
{
    report_putf(f, "<section id=\"timeline\"><h2>Timeline</h2>\n");
    if (m->nmarks == 0) {
        report_putf(f, "<p class=\"note\">Nothing to show.</p></section>\n");
        return;
    }
    int64_t span = m->end_ts - m->start_ts;
    if (span < 1)
        span = 1;
    size_t lanes = 1 + m->nws;
    int height = TL_AXIS + (int)lanes * TL_ROW + 4;
    /* controls: zoom and which kinds show (protocol messages off at first: they are most of a
     * trail and the other kinds say what they did) */
    report_putf(f, "<div class=\"tl-controls\"><button type=\"button\" id=\"zin\">zoom in</button>"
                   "<button type=\"button\" id=\"zout\">zoom out</button><button type=\"button\" "
                   "id=\"zfit\">whole run</button>"
                   "<span class=\"hint\">Ctrl + wheel zooms where the pointer is. Hover over an entry "
                   "to see its body; "
                   "click to keep it.</span></div>\n<div class=\"legend\">");
    for (int k = 0; k < REPORT_KIND_COUNT; k++) {
        size_t n = 0;
        for (size_t i = 0; i < m->nmarks; i++)
            n += m->marks[i].kind == (enum report_kind)k;
        if (!n)
            continue;
        report_putf(f,
                    "<label><input type=\"checkbox\" class=\"kind-toggle\" data-kind=\"%s\"%s> "
                    "<svg width=\"12\" height=\"12\" class=\"sw\"><rect class=\"k-%s\" width=\"12\" "
                    "height=\"12\"/></svg> %s (%zu)</label>\n",
                    report_kind_names[k], k == REPORT_KIND_MESSAGE ? "" : " checked",
                    report_kind_names[k], report_kind_names[k], n);
    }
    report_putf(f, "</div>\n<div class=\"tl-wrap\">\n");
    /* lane labels, in their own column so they stay while the marks scroll */
    report_putf(f, "<svg class=\"tl-labels\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n",
                TL_LABEL_W, height, TL_LABEL_W, height);
    for (size_t i = 0; i < lanes; i++) {
        size_t lane = i == 0 ? 0 : 1 + m->lane_order[i - 1];
        double y = TL_AXIS + (double)i * TL_ROW;
        report_putf(f, "<rect class=\"lane-bg%s\" x=\"0\" y=\"%.1f\" width=\"%d\" height=\"%d\"/>\n",
                    i % 2 ? " odd" : "", y, TL_LABEL_W, TL_ROW);
        lane_label(f, m, lane, y);
    }
    report_putf(f, "</svg>\n<div class=\"tl-scroll\" id=\"tl-scroll\">\n");
    int width = TL_WIDTH + 2 * TL_PAD;
    report_putf(f,
                "<svg id=\"tl\" class=\"hide-message\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                "data-span=\"%lld\" "
                "data-width=\"%d\" data-pad=\"%d\" data-axis=\"%d\">\n",
                width, height, width, height, (long long)span, TL_WIDTH, TL_PAD, TL_AXIS);
    _cleanup_free_ double *lane_y = calloc(lanes, sizeof(double));
    if (!lane_y) {
        report_putf(
            f,
            "</svg></div></div><p class=\"note\">Out of memory drawing the timeline.</p></section>\n");
        return;
    }
    for (size_t i = 0; i < lanes; i++) {
        size_t lane = i == 0 ? 0 : 1 + m->lane_order[i - 1];
        lane_y[lane] = TL_AXIS + (double)i * TL_ROW;
        report_putf(f, "<rect class=\"lane-bg%s\" x=\"0\" y=\"%.1f\" width=\"100%%\" height=\"%d\"/>\n",
                    i % 2 ? " odd" : "", lane_y[lane], TL_ROW);
    }
    /* the axis at zoom 1 (the script redraws it at each zoom) */
    report_putf(f, "<g id=\"tl-axis\">\n");
    for (int i = 0; i <= 10; i++) {
        int64_t t = span * i / 10;
        char lbl[32];
        report_fmt_duration_us(t, lbl, sizeof(lbl));
        double x = xpos(t, span);
        report_putf(f,
                    "<line class=\"tick\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/><text "
                    "class=\"tick-label\" x=\"%.1f\" y=\"14\">+%s</text>\n",
                    x, x, TL_AXIS - 4, height, x + 2, lbl);
    }
    report_putf(f, "</g>\n");
    /* bars first, so the instants draw over them */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < m->nmarks; i++) {
            const struct report_mark *k = &m->marks[i];
            bool bar = k->kind == REPORT_KIND_PROCESS && (k->dur_us > 0 || k->open);
            if (bar == (pass == 0))
                mark(f, m, k, lane_y[k->lane], span);
        }
    report_putf(f, "</svg>\n</div>\n</div>\n");
    if (m->marks_dropped)
        report_putf(f,
                    "<p class=\"note\">The timeline shows %zu entries (at most %d, protocol messages at "
                    "most a third "
                    "of them); %llu more are in the trail (<code>corral trail --db FILE</code> lists "
                    "them all).</p>\n",
                    m->nmarks, REPORT_MARKS_MAX, (unsigned long long)m->marks_dropped);
    report_putf(f, "<div class=\"detail\"><div id=\"detail-head\">Hover over or click an entry of the "
                   "timeline to see its "
                   "body here.</div><pre id=\"detail\"></pre></div>\n</section>\n");
}
