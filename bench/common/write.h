/* write.h — the output writers of the measuring half: the same block in
 * three formats, the HTML page around them, and the SVG charts in it.
 *
 * A report is a list of blocks, and each block is written once for all
 * its formats: the terminal's text (FMT_TEXT, fixed-width columns), the
 * Markdown of report.md (FMT_MD) and the HTML of report.html (FMT_HTML).
 * A section opens with a title and a note, holds a table, a list or
 * paragraphs, and the writers below put each in the form its format
 * wants, so that what a section shows is decided in one place and no
 * format drifts from another. In HTML titles, a section's note, cells,
 * labelled values and the charts' texts are escaped (html_text); head
 * names and the paragraphs of write_note* are written as they are, so a
 * head may hold an entity (&micro;), and the text and Markdown forms then
 * get names of their own.
 *
 * The charts are inline SVG, drawn from a few shapes (bars, lines, dots,
 * texts, axes and ticks) on a frame whose plot area sits inside margins.
 * Every chart is a <figure> with an <svg data-chart="KIND"
 * data-points="N">, and each of its N marks (a bar, a dot, a group) has
 * class "mark" and a <title>, so that a test reading the page's DOM can
 * tell that each chart has data and drew it. A coordinate is written with
 * one decimal, none when it is whole. Nothing here reads JSON: a writer
 * takes the strings and numbers it prints.
 */
#ifndef LOCKLAB_BENCH_WRITE_H
#define LOCKLAB_BENCH_WRITE_H

#include <stddef.h>
#include <stdio.h>

enum fmt { FMT_TEXT, FMT_MD, FMT_HTML };

/* ---------------------------------------------------------------- blocks */

/* A section's title and the note that says how to read it. The title is
 * lower case on the terminal (without the note) and capitalised as a
 * heading in Markdown and HTML. */
void write_section(FILE *f, enum fmt fmt, const char *title, const char *note);

/* A title without a note. */
void write_heading(FILE *f, enum fmt fmt, const char *title);

/* A paragraph of notes: what comes between open and close is written as
 * it is (a blank line before it on the terminal, one after it in
 * Markdown, a <p class=note> in HTML). */
void write_note_open(FILE *f, enum fmt fmt);
void write_note_close(FILE *f, enum fmt fmt);
/* A paragraph of items, "a; b; c" and a tail: write_note_item before each
 * item (n counts them, from 0), write_note_items_close after the last,
 * which writes nothing when there was none. */
void write_note_item(FILE *f, enum fmt fmt, int *n);
void write_note_items_close(FILE *f, enum fmt fmt, int n, const char *tail);
/* A paragraph of one printf-formatted note. */
void write_note(FILE *f, enum fmt fmt, const char *note, ...)
    __attribute__((format(printf, 3, 4)));

/* Labelled values, kv[i][0] the label and kv[i][1] the value; a pair with
 * no value (NULL) is left out. A list in Markdown, a table in HTML. */
void write_kv(FILE *f, enum fmt fmt, const char *const kv[][2], size_t n);

/* ---------------------------------------------------------------- tables */

/* A table's columns: names[0..n) for its head and, for the terminal, the
 * width of each (the first column left-aligned, the others right). */
struct table {
    FILE              *f;
    enum fmt           fmt;
    int                n;
    const char *const *names;
    const int         *widths;
};

/* A column group of a two-row head (HTML): `span` columns under one
 * label, or, with span 0, one column whose name stands over both rows. */
struct col_group {
    const char *label;
    int         span;
};

void table_head(const struct table *t);
/* In HTML the groups over the names, in the other formats table_head(). */
void table_head_grouped(const struct table *t, const struct col_group *g, int ngroups);
/* A row of t->n cells; with cls, the HTML row is of that class ("bad"). */
void table_row(const struct table *t, const char *const *cells);
void table_row_class(const struct table *t, const char *const *cells, const char *cls);
void table_end(const struct table *t);

/* ---------------------------------------------------------------- HTML */

/* s with HTML's special characters escaped. */
void html_text(FILE *f, const char *s);

/* The page's head (one stylesheet for every page, `max_width` pixels
 * wide) and end; title escaped. */
void html_page_open(FILE *f, const char *title, int max_width);
void html_page_close(FILE *f);

/* ---------------------------------------------------------------- SVG */

/* A chart's frame: its picture, the margins of its plot area (0 for a
 * chart without axes), its font size, what data-chart calls it and the
 * <figure>'s style (NULL: none). */
struct svg_frame {
    const char *kind;
    int         w, h;
    int         l, r, t, b;
    int         font;
    const char *style;
};

/* x at a share 0..1 of the plot's width; y of v on a scale 0..max. */
double svg_x(const struct svg_frame *fr, double share);
double svg_y(const struct svg_frame *fr, double v, double max);

/* The <figure>, its caption (printf-formatted, escaped) and the <svg> of
 * `points` marks; its end. */
void svg_open(FILE *f, const struct svg_frame *fr, size_t points, const char *caption, ...)
    __attribute__((format(printf, 4, 5)));
void svg_close(FILE *f);

/* The axes: the plot area's left and bottom edges. */
void svg_axes(FILE *f, const struct svg_frame *fr);
/* A label under the x axis at x; one left of the y axis at y, with its
 * tick; a grid line across the plot at y. */
void svg_tick_x(FILE *f, const struct svg_frame *fr, double x, const char *label);
void svg_tick_y(FILE *f, const struct svg_frame *fr, double y, const char *label);
void svg_grid_y(FILE *f, const struct svg_frame *fr, double y);

/* A text at x, y (anchor: NULL, "middle" or "end"), printf-formatted,
 * escaped, and a line break after it. */
void svg_text(FILE *f, double x, double y, const char *anchor, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A rectangle: a bar, which is a mark with its title (printf-formatted,
 * escaped), or a plain one (a legend's key, a part of a group). */
void svg_bar(FILE *f, double x, double y, double w, double h, const char *colour,
             const char *title, ...) __attribute__((format(printf, 7, 8)));
void svg_rect(FILE *f, double x, double y, double w, double h, const char *colour);

/* A dot of radius r; a mark when `mark`, its title printf-formatted. */
void svg_dot(FILE *f, double x, double y, double r, const char *colour, int mark,
             const char *title, ...) __attribute__((format(printf, 7, 8)));

/* A group of shapes that is one mark, with its title; its end. */
void svg_group_open(FILE *f, const char *title, ...) __attribute__((format(printf, 2, 3)));
void svg_group_close(FILE *f);

/* A line through the n points (x[i], y[i]), broken where y is NaN;
 * dash: a stroke-dasharray ("5 4") or NULL. */
void svg_line(FILE *f, const double *x, const double *y, size_t n, const char *colour,
              double width, const char *dash);

#endif /* LOCKLAB_BENCH_WRITE_H */
