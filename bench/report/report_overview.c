/* report_overview.c — the first screen of report.html: one chart that says
 * what the comparison found before any table does.
 *
 * A bar a run, its sold/s, the runs grouped by family (a row of the
 * family's name over its bars, in the order the runs came); a run that
 * sold what it did not have (oversold or lost updates) is red and says how
 * many units, the others blue; the ceiling of its strategy's protocol
 * (ll-limits, report_ceiling.c) is a black tick across its bar, and after
 * a capacity run (report_capacity.c) its capacity at the target a green
 * diamond on it. One scale for all: the largest of the bars, ticks and
 * diamonds. The chart is sized to its rows, and overview_height() says
 * how tall the page's first screen is with it (the title, one line and
 * the chart), which bench/compare renders as report.png.
 */
#include "report_private.h"

#include <math.h>
#include <string.h>

#define OV_WIDTH   1120                 /* the chart, as the page is wide    */
#define OV_LABEL_W 230                  /* the names' column                 */
#define OV_BAR_H   15
#define OV_ROW_H   19                   /* a bar's row                       */
#define OV_FAM_H   22                   /* a family's name                   */
#define OV_TOP     34                   /* the legend                        */
#define OV_BOTTOM  30                   /* the axis' labels                  */
#define OV_HEAD_PX 150                  /* the title and its line, above     */
#define OV_FAMILIES_MAX 64

/* The families in the order their first run came; their number. */
static size_t ov_families(const json_t *runs, const char **fam)
{
    const json_t *run;
    size_t i, k, n = 0;

    json_array_foreach(runs, i, run) {
        const char *f = jstr(run, "family", "-");
        for (k = 0; k < n && strcmp(fam[k], f); k++)
            ;
        if (k == n && n < OV_FAMILIES_MAX)
            fam[n++] = f;
    }
    return n;
}

static int ov_lossy(const json_t *run)
{
    return jint(run, "oversold") > 0 || jint(run, "lost_updates") != 0;
}

static double ov_capacity(const json_t *run)
{
    const json_t *at = json_object_get(json_object_get(run, "capacity"), "at");
    return json_is_object(at) ? jnum(at, "rate") : -1;
}

static int ov_chart_height(const json_t *res)
{
    const json_t *runs = json_object_get(res, "runs");
    const char *fam[OV_FAMILIES_MAX];
    size_t nfam = ov_families(runs, fam);

    return OV_TOP + (int)json_array_size(runs) * OV_ROW_H + (int)nfam * OV_FAM_H + OV_BOTTOM;
}

int overview_height(const json_t *res)
{
    return OV_HEAD_PX + ov_chart_height(res);
}

/* The scale's end: the largest bar, ceiling or capacity, rounded up to
 * a tick of some five (axis_step). */
static double ov_scale(const json_t *runs, double *step)
{
    const json_t *run;
    double max = 1;
    size_t i;

    json_array_foreach(runs, i, run) {
        double v[3] = { jnum(run, "sold_per_s"), jnum(run, "ceiling_rate"), ov_capacity(run) };
        for (int k = 0; k < 3; k++)
            if (v[k] > max)
                max = v[k];
    }
    *step = axis_step(max, 5);
    return *step * ceil(max / *step);
}

static void ov_legend(FILE *f, int have_cap, int have_ceiling, const char *target)
{
    int x = OV_LABEL_W;

    svg_rect(f, x, 10, 12, 12, "#3366cc");
    svg_text(f, x + 16, 20, NULL, "sold/s, exact");
    svg_rect(f, x + 130, 10, 12, 12, "#cc3333");
    svg_text(f, x + 146, 20, NULL, "sold/s, units oversold or lost");
    x += 370;
    if (have_ceiling) {
        svg_rect(f, x + 5, 8, 2, 16, "#111111");
        svg_text(f, x + 14, 20, NULL, "the ceiling of its protocol (ll-limits)");
        x += 280;
    }
    if (have_cap) {
        fprintf(f, "<path d=\"M%d 16 l6 -6 l6 6 l-6 6 z\" fill=\"#339966\"/>\n", x);
        svg_text(f, x + 16, 20, NULL, "capacity at %s", target);
    }
}

/* One run's row at y: its name, its bar, its ceiling's tick, its
 * capacity's diamond, its value (and what it lost). */
static void ov_row(FILE *f, const struct svg_frame *fr, const json_t *run, double max, int y)
{
    double chart_w = fr->w - OV_LABEL_W - 150, sold = jnum(run, "sold_per_s");
    double ceil = jnum(run, "ceiling_rate"), cap = ov_capacity(run);
    double w = sold / max * chart_w;
    int lossy = ov_lossy(run);
    char label[48], what[96] = "";

    run_label(run, label, sizeof label);
    svg_text(f, OV_LABEL_W - 8, y + OV_BAR_H - 3, "end", "%s", label);
    if (lossy)
        snprintf(what, sizeof what, "; %lld oversold, %lld lost updates", jint(run, "oversold"),
                 jint(run, "lost_updates"));
    svg_bar(f, OV_LABEL_W, y, w > 1 ? w : 1, OV_BAR_H, lossy ? "#cc3333" : "#3366cc",
            "%s: %.0f sold/s%s%s", label, sold, what,
            ceil > 0 ? "" : " (no ceiling measured)");
    if (ceil > 0)
        svg_rect(f, OV_LABEL_W + ceil / max * chart_w - 1, y - 2, 2, OV_BAR_H + 4, "#111111");
    if (cap > 0)
        fprintf(f, "<path d=\"M%.1f %d l6 -6 l6 6 l-6 6 z\" fill=\"#339966\"><title>capacity "
                "%.0f/s</title></path>\n", OV_LABEL_W + cap / max * chart_w - 6,
                y + OV_BAR_H / 2, cap);
    if (jint(run, "oversold") > 0 && jint(run, "lost_updates") != 0)
        svg_text(f, OV_LABEL_W + w + 6, y + OV_BAR_H - 3, NULL, "%.0f/s, %lld lost, %lld oversold",
                 sold, jint(run, "lost_updates"), jint(run, "oversold"));
    else if (lossy)
        svg_text(f, OV_LABEL_W + w + 6, y + OV_BAR_H - 3, NULL, "%.0f/s, %lld %s", sold,
                 jint(run, "oversold") > 0 ? jint(run, "oversold") : jint(run, "lost_updates"),
                 jint(run, "oversold") > 0 ? "oversold" : "lost");
    else
        svg_text(f, OV_LABEL_W + w + 6, y + OV_BAR_H - 3, NULL, "%.0f/s", sold);
}

void print_overview(FILE *f, const json_t *res, enum fmt fmt)
{
    const json_t *runs = json_object_get(res, "runs"), *run;
    const json_t *settings = json_object_get(res, "settings"), *cap = NULL;
    const char *fam[OV_FAMILIES_MAX];
    size_t nfam = ov_families(runs, fam), i, k;
    struct svg_frame fr = { "overview", OV_WIDTH, 0, OV_LABEL_W, 150, OV_TOP, OV_BOTTOM, 12, NULL };
    double step, max = ov_scale(runs, &step), v;
    int y = OV_TOP + 4, have_ceiling = 0;
    char target[64] = "";

    if (fmt != FMT_HTML)
        return;
    json_array_foreach(runs, i, run) {
        have_ceiling |= jnum(run, "ceiling_rate") > 0;
        if (cap == NULL)
            cap = json_object_get(run, "capacity");
    }
    if (cap)
        snprintf(target, sizeof target, "p%g <= %g ms", jnum(cap, "slo_pct"), jnum(cap, "slo_ms"));
    fprintf(f, "<h1>locklab: every lock strategy against the physical limit</h1>\n<p>Scenario <b>");
    html_text(f, jstr(settings, "scenario", "?"));
    fprintf(f, "</b>, started ");
    html_text(f, jstr(settings, "started", "?"));
    fprintf(f, ": sold per second by strategy, grouped by family; the tables follow.</p>\n");
    if (json_array_size(runs) == 0)
        return;
    fr.h = ov_chart_height(res);
    svg_open(f, &fr, json_array_size(runs), "Sold per second%s%s", cap ? ", and capacity at " : "",
             target);
    ov_legend(f, cap != NULL, have_ceiling, target);
    for (v = 0; v <= max + step / 2; v += step) {
        double x = OV_LABEL_W + v / max * (fr.w - OV_LABEL_W - 150);
        char tick[32];
        snprintf(tick, sizeof tick, "%.0f", v);
        fprintf(f, "<path d=\"M%.1f %d V%d\" stroke=\"#eee\"/>\n", x, OV_TOP, fr.h - OV_BOTTOM);
        svg_text(f, x, fr.h - OV_BOTTOM + 16, "middle", "%s", tick);
    }
    for (k = 0; k < nfam; k++) {
        fprintf(f, "<text x=\"8\" y=\"%d\" font-weight=\"bold\">", y + 15);
        html_text(f, fam[k]);
        fputs("</text>\n", f);
        y += OV_FAM_H;
        json_array_foreach(runs, i, run) {
            if (strcmp(jstr(run, "family", "-"), fam[k]))
                continue;
            ov_row(f, &fr, run, max, y);
            y += OV_ROW_H;
        }
    }
    svg_close(f);
}
