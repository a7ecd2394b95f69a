/* write.c — the output writers (write.h): blocks and tables in three
 * formats, the HTML page, the SVG shapes.
 */
#include "write.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- escaping */

void html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:  fputc(*s, f);
        }
    }
}

/* A printf-formatted text, escaped. */
static void html_vtext(FILE *f, const char *fmt, va_list ap)
{
    char small[512], *s = small;
    va_list again;
    int n;

    va_copy(again, ap);
    n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small) {
        s = malloc((size_t)n + 1);
        if (s == NULL)
            abort();                          /* out of memory */
        vsnprintf(s, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    if (n > 0)
        html_text(f, s);
    if (s != small)
        free(s);
}

/* ---------------------------------------------------------------- blocks */

/* A title capitalised: its first letter upper case. */
static void capitalised(FILE *f, enum fmt fmt, const char *title)
{
    char first[2] = { title[0], '\0' };

    if (first[0] >= 'a' && first[0] <= 'z')
        first[0] = (char)(first[0] - 'a' + 'A');
    if (fmt == FMT_HTML) {
        html_text(f, first);
        html_text(f, title[0] ? title + 1 : title);
    } else {
        fputs(first, f);
        fputs(title[0] ? title + 1 : title, f);
    }
}

void write_heading(FILE *f, enum fmt fmt, const char *title)
{
    if (fmt == FMT_TEXT) {
        fprintf(f, "\n%s\n", title);
    } else if (fmt == FMT_MD) {
        fputs("## ", f);
        capitalised(f, fmt, title);
        fputs("\n\n", f);
    } else {
        fputs("<h2>", f);
        capitalised(f, fmt, title);
        fputs("</h2>\n", f);
    }
}

void write_section(FILE *f, enum fmt fmt, const char *title, const char *note)
{
    write_heading(f, fmt, title);
    if (fmt == FMT_MD) {
        fprintf(f, "%s\n\n", note);
    } else if (fmt == FMT_HTML) {
        fputs("<p class=note>", f);
        html_text(f, note);
        fputs("</p>\n", f);
    }
}

void write_note_open(FILE *f, enum fmt fmt)
{
    fputs(fmt == FMT_HTML ? "<p class=note>" : fmt == FMT_TEXT ? "\n" : "", f);
}

void write_note_close(FILE *f, enum fmt fmt)
{
    fputs(fmt == FMT_HTML ? "</p>\n" : fmt == FMT_MD ? "\n\n" : "\n", f);
}

void write_note_item(FILE *f, enum fmt fmt, int *n)
{
    if ((*n)++)
        fputs("; ", f);
    else
        write_note_open(f, fmt);
}

void write_note_items_close(FILE *f, enum fmt fmt, int n, const char *tail)
{
    if (n == 0)
        return;
    fputs(tail, f);
    write_note_close(f, fmt);
}

void write_note(FILE *f, enum fmt fmt, const char *note, ...)
{
    va_list ap;

    write_note_open(f, fmt);
    va_start(ap, note);
    vfprintf(f, note, ap);
    va_end(ap);
    write_note_close(f, fmt);
}

void write_kv(FILE *f, enum fmt fmt, const char *const kv[][2], size_t n)
{
    size_t i;

    if (fmt == FMT_HTML)
        fputs("<table>", f);
    for (i = 0; i < n; i++) {
        if (kv[i][1] == NULL)
            continue;
        if (fmt == FMT_HTML) {
            fputs("<tr><th>", f);
            html_text(f, kv[i][0]);
            fputs("</th><td>", f);
            html_text(f, kv[i][1]);
            fputs("</td></tr>", f);
        } else {
            fprintf(f, "%s%s: %s\n", fmt == FMT_MD ? "- " : "", kv[i][0], kv[i][1]);
        }
    }
    if (fmt == FMT_HTML)
        fputs("</table>\n", f);
}

/* ---------------------------------------------------------------- tables */

/* The head row's names (the second row of a grouped head: only the
 * columns under a group). */
static void head_names(const struct table *t, const struct col_group *g, int ngroups)
{
    int i, k, col = 0;

    if (g == NULL) {
        for (i = 0; i < t->n; i++)
            fprintf(t->f, "<th>%s</th>", t->names[i]);
        return;
    }
    for (k = 0; k < ngroups; k++) {
        if (g[k].span == 0) {
            col++;
            continue;
        }
        for (i = 0; i < g[k].span && col < t->n; i++)
            fprintf(t->f, "<th>%s</th>", t->names[col++]);
    }
}

void table_head_grouped(const struct table *t, const struct col_group *g, int ngroups)
{
    FILE *f = t->f;
    int k, col = 0;

    if (t->fmt != FMT_HTML) {
        table_head(t);
        return;
    }
    fputs("<table><tr>", f);
    for (k = 0; k < ngroups; k++) {
        if (g[k].span == 0)
            fprintf(f, "<th rowspan=2>%s</th>", t->names[col++]);
        else {
            fprintf(f, "<th colspan=%d>%s</th>", g[k].span, g[k].label);
            col += g[k].span;
        }
    }
    fputs("</tr><tr>", f);
    head_names(t, g, ngroups);
    fputs("</tr>\n", f);
}

void table_head(const struct table *t)
{
    FILE *f = t->f;
    int i;

    if (t->fmt == FMT_HTML) {
        fputs("<table><tr>", f);
        head_names(t, NULL, 0);
        fputs("</tr>\n", f);
        return;
    }
    for (i = 0; i < t->n; i++) {
        if (t->fmt == FMT_TEXT)
            fprintf(f, "%s%*s", i ? " " : "", i ? t->widths[i] : -t->widths[i], t->names[i]);
        else
            fprintf(f, "%s%s", i ? " | " : "| ", t->names[i]);
    }
    if (t->fmt == FMT_MD) {
        fputs(" |\n|", f);
        for (i = 0; i < t->n; i++)
            fputs(i ? "--:|" : "---|", f);
    }
    fputc('\n', f);
}

void table_row_class(const struct table *t, const char *const *cells, const char *cls)
{
    FILE *f = t->f;
    int i;

    if (t->fmt == FMT_HTML && cls)
        fprintf(f, "<tr class=\"%s\"><td>", cls);
    else if (t->fmt == FMT_HTML)
        fputs("<tr><td>", f);
    for (i = 0; i < t->n; i++) {
        if (t->fmt == FMT_TEXT) {
            fprintf(f, "%s%*s", i ? " " : "", i ? t->widths[i] : -t->widths[i], cells[i]);
        } else if (t->fmt == FMT_MD) {
            fprintf(f, "%s%s", i ? " | " : "| ", cells[i]);
        } else {
            if (i)
                fputs("</td><td class=n>", f);
            html_text(f, cells[i]);
        }
    }
    fputs(t->fmt == FMT_MD ? " |\n" : t->fmt == FMT_HTML ? "</td></tr>\n" : "\n", f);
}

void table_row(const struct table *t, const char *const *cells)
{
    table_row_class(t, cells, NULL);
}

void table_end(const struct table *t)
{
    fputs(t->fmt == FMT_HTML ? "</table>\n" : t->fmt == FMT_MD ? "\n" : "", t->f);
}

/* ---------------------------------------------------------------- the page */

void html_page_open(FILE *f, const char *title, int max_width)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", f);
    html_text(f, title);
    fprintf(f, "</title><style>body{font-family:sans-serif;max-width:%dpx;margin:2em auto;"
            "color:#222}table{border-collapse:collapse;margin:1em 0;font-size:92%%}"
            "td,th{border:1px solid #ccc;padding:3px 5px}td:first-child{white-space:nowrap}"
            "td.n{text-align:right;font-variant-numeric:tabular-nums}"
            "th{background:#f3f3f3}tr.bad td{background:#fdecea}figure{margin:1.5em 0}"
            "figcaption{font-weight:bold}.note{color:#555;font-size:90%%}</style></head>"
            "<body>\n", max_width);
}

void html_page_close(FILE *f)
{
    fputs("</body></html>\n", f);
}

/* ---------------------------------------------------------------- SVG */

/* A coordinate as the charts write it: one decimal, none when it is
 * whole (170, 170.5). */
struct num {
    char s[32];
};

static struct num num(double v)
{
    struct num n;
    size_t len;

    snprintf(n.s, sizeof n.s, "%.1f", v);
    len = strlen(n.s);
    if (len >= 2 && strcmp(n.s + len - 2, ".0") == 0)
        n.s[len - 2] = '\0';
    if (strcmp(n.s, "-0") == 0)
        strcpy(n.s, "0");
    return n;
}

double svg_x(const struct svg_frame *fr, double share)
{
    return fr->l + share * (fr->w - fr->l - fr->r);
}

double svg_y(const struct svg_frame *fr, double v, double max)
{
    double ph = fr->h - fr->t - fr->b;

    return fr->t + ph - v / max * ph;
}

void svg_open(FILE *f, const struct svg_frame *fr, size_t points, const char *caption, ...)
{
    va_list ap;

    if (fr->style)
        fprintf(f, "<figure style=\"%s\"><figcaption>", fr->style);
    else
        fputs("<figure><figcaption>", f);
    va_start(ap, caption);
    html_vtext(f, caption, ap);
    va_end(ap);
    fprintf(f, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" role=\"img\" font-family=\"sans-serif\" font-size=\"%d\" "
            "data-chart=\"%s\" data-points=\"%zu\">\n", fr->w, fr->h, fr->font, fr->kind, points);
}

void svg_close(FILE *f)
{
    fputs("</svg></figure>\n", f);
}

void svg_axes(FILE *f, const struct svg_frame *fr)
{
    fprintf(f, "<path d=\"M%d %d V%d H%d\" stroke=\"#888\" fill=\"none\"/>\n", fr->l, fr->t,
            fr->h - fr->b, fr->w - fr->r);
}

void svg_tick_x(FILE *f, const struct svg_frame *fr, double x, const char *label)
{
    fprintf(f, "<text x=\"%s\" y=\"%d\" text-anchor=\"middle\">", num(x).s, fr->h - fr->b + 14);
    html_text(f, label);
    fputs("</text>\n", f);
}

void svg_tick_y(FILE *f, const struct svg_frame *fr, double y, const char *label)
{
    fprintf(f, "<text x=\"%d\" y=\"%s\" text-anchor=\"end\">", fr->l - 4, num(y + 4).s);
    html_text(f, label);
    fprintf(f, "</text><path d=\"M%d %s h4\" stroke=\"#888\"/>\n", fr->l - 2, num(y).s);
}

void svg_grid_y(FILE *f, const struct svg_frame *fr, double y)
{
    fprintf(f, "<path d=\"M%d %s H%d\" stroke=\"#e4e4e4\"/>", fr->l, num(y).s, fr->w - fr->r);
}

void svg_text(FILE *f, double x, double y, const char *anchor, const char *fmt, ...)
{
    va_list ap;

    fprintf(f, "<text x=\"%s\" y=\"%s\"", num(x).s, num(y).s);
    if (anchor)
        fprintf(f, " text-anchor=\"%s\"", anchor);
    fputc('>', f);
    va_start(ap, fmt);
    html_vtext(f, fmt, ap);
    va_end(ap);
    fputs("</text>\n", f);
}

/* A rectangle's position, size and colour, its tag left open. */
static void rect_open(FILE *f, const char *cls, double x, double y, double w, double h,
                      const char *colour)
{
    fprintf(f, "<rect%s x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"", cls,
            num(x).s, num(y).s, num(w).s, num(h).s, colour);
}

void svg_rect(FILE *f, double x, double y, double w, double h, const char *colour)
{
    rect_open(f, "", x, y, w, h, colour);
    fputs("/>", f);
}

void svg_bar(FILE *f, double x, double y, double w, double h, const char *colour,
             const char *title, ...)
{
    va_list ap;

    rect_open(f, " class=\"mark\"", x, y, w, h, colour);
    fputs("><title>", f);
    va_start(ap, title);
    html_vtext(f, title, ap);
    va_end(ap);
    fputs("</title></rect>", f);
}

void svg_dot(FILE *f, double x, double y, double r, const char *colour, int mark,
             const char *title, ...)
{
    va_list ap;

    fprintf(f, "<circle%s cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"%s\"><title>",
            mark ? " class=\"mark\"" : "", num(x).s, num(y).s, num(r).s, colour);
    va_start(ap, title);
    html_vtext(f, title, ap);
    va_end(ap);
    fputs("</title></circle>\n", f);
}

void svg_group_open(FILE *f, const char *title, ...)
{
    va_list ap;

    fputs("<g class=\"mark\"><title>", f);
    va_start(ap, title);
    html_vtext(f, title, ap);
    va_end(ap);
    fputs("</title>", f);
}

void svg_group_close(FILE *f)
{
    fputs("</g>\n", f);
}

void svg_line(FILE *f, const double *x, const double *y, size_t n, const char *colour,
              double width, const char *dash)
{
    size_t i;
    int open = 0;

    for (i = 0; i <= n; i++) {
        if (i == n || isnan(y[i])) {          /* a gap, or the end: the run so far */
            if (open)
                fputs("\"/>\n", f);
            open = 0;
            continue;
        }
        if (!open) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"", colour,
                    num(width).s);
            if (dash)
                fprintf(f, " stroke-dasharray=\"%s\"", dash);
            fputs(" points=\"", f);
        }
        fprintf(f, "%s%s,%s", open ? " " : "", num(x[i]).s, num(y[i]).s);
        open = 1;
    }
}
