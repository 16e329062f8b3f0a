/*
 * kubectl-style tables.
 *
 * kubectl prints through Go's tabwriter with minwidth 6, padding 3 and
 * space fill: every column but the last is as wide as its widest cell plus
 * three spaces, and at least six; the last column is not padded, so lines
 * carry no trailing blanks. The table owns copies of every cell. Widths only
 * grow, and survive gt_cli_table_clear, so --watch can print each new row in
 * line with the ones already on screen without keeping them all.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum { MIN_WIDTH = 6, PADDING = 3 };

static const char none_cell[] = "<none>";

static void widen(struct gt_cli_table *t, size_t col, const char *s)
{
    size_t n = strlen(s);
    if (n > t->widths[col]) {
        t->widths[col] = n;
    }
}

void gt_cli_table_init(struct gt_cli_table *t, size_t n_cols, const char *const *headers)
{
    GT_ASSERT(n_cols > 0);
    t->n_cols = n_cols;
    t->headers = gt_xcalloc(n_cols, sizeof(char *));
    t->widths = gt_xcalloc(n_cols, sizeof(size_t));
    t->cells = NULL;
    t->n_rows = 0;
    t->cap_rows = 0;
    for (size_t i = 0; i < n_cols; i++) {
        t->headers[i] = gt_xstrdup(headers[i]);
        widen(t, i, headers[i]);
    }
}

void gt_cli_table_fini(struct gt_cli_table *t)
{
    for (size_t i = 0; i < t->n_cols; i++) {
        free(t->headers[i]);
    }
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++) {
        free(t->cells[i]);
    }
    free(t->headers);
    free(t->cells);
    free(t->widths);
    memset(t, 0, sizeof(*t));
}

void gt_cli_table_add(struct gt_cli_table *t, const char *const *cells)
{
    /* an element is a whole row of n_cols cells */
    t->cells = gt_vec_grow(t->cells, &t->cap_rows, t->n_rows + 1, 16, t->n_cols * sizeof(char *));
    char **row = t->cells + t->n_rows * t->n_cols;
    for (size_t i = 0; i < t->n_cols; i++) {
        const char *s = cells[i] ? cells[i] : none_cell;
        row[i] = gt_xstrdup(s);
        widen(t, i, s);
    }
    t->n_rows++;
}

static void render_line(const struct gt_cli_table *t, char *const *cells, struct gt_buf *out)
{
    for (size_t i = 0; i < t->n_cols; i++) {
        gt_buf_puts(out, cells[i]);
        if (i + 1 == t->n_cols) {
            break;
        }
        size_t width = t->widths[i] + PADDING;
        if (width < MIN_WIDTH) {
            width = MIN_WIDTH;
        }
        for (size_t n = strlen(cells[i]); n < width; n++) {
            gt_buf_append(out, " ", 1);
        }
    }
    gt_buf_append(out, "\n", 1);
}

void gt_cli_table_render(const struct gt_cli_table *t, bool with_headers, struct gt_buf *out)
{
    if (with_headers) {
        render_line(t, t->headers, out);
    }
    for (size_t r = 0; r < t->n_rows; r++) {
        render_line(t, t->cells + r * t->n_cols, out);
    }
}

void gt_cli_table_clear(struct gt_cli_table *t)
{
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++) {
        free(t->cells[i]);
    }
    t->n_rows = 0;
}
