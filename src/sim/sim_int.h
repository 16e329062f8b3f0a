/*
 * sim internals: the strict CSV line reader every trace reader shares.
 * Included only from src/sim.
 *
 * A reader walks a buffer line by line; fields point into the buffer
 * (borrowed, not NUL-terminated). Lines end with LF; CR, NUL and other
 * control bytes are errors, quoting is not supported (the traces have no
 * quoted fields), and empty lines are allowed only at the end of the file.
 */
#ifndef GT_SIM_INT_H
#define GT_SIM_INT_H

#include "sim/sim.h"

#define GT_SIM_CSV_MAX_FIELDS 64

struct gt_sim_field {
    const char *p;
    size_t len;
};

struct gt_sim_csv {
    const char *p, *end;
    uint32_t line; /* of the line last returned, 1-based */
    struct gt_sim_field f[GT_SIM_CSV_MAX_FIELDS];
    size_t n; /* fields of the line last returned */
};

/* Start reading data[0..len). */
void gt_sim_csv_init(struct gt_sim_csv *c, const char *data, size_t len);
/* Read the next line into c->f/c->n. 1: a line; 0: end of data; GT_EINVAL
 * (err: "line N: ...") for a bad byte, an empty line before the end, or more
 * than GT_SIM_CSV_MAX_FIELDS fields. */
int gt_sim_csv_next(struct gt_sim_csv *c, struct gt_err *err);
/* Check the line just read has exactly n fields and, if names is not NULL,
 * that they are the comma-separated names (a header). GT_EINVAL with the
 * line. */
int gt_sim_csv_expect(const struct gt_sim_csv *c, size_t n, const char *names, struct gt_err *err);
/* Select columns by name in the header line just read: idx[k] is the field
 * index of names[k] (n <= 32), or -1 when it is absent and bit k of
 * optional is set. Other columns are ignored. GT_EINVAL naming the line and
 * the column for a required column missing, a column named twice or an
 * empty header field. */
int gt_sim_csv_columns(const struct gt_sim_csv *c, const char *const *names, size_t n,
                       uint32_t optional, int *idx, struct gt_err *err);
/* Field i as a decimal integer in [min, max] ("12" or, if whole_float,
 * also "12.0"). GT_EINVAL naming the line and what. */
int gt_sim_csv_i64(const struct gt_sim_csv *c, size_t i, const char *what, int64_t min, int64_t max,
                   bool whole_float, int64_t *out, struct gt_err *err);
/* Field i copied as a new string (caller frees); GT_EINVAL if empty. */
int gt_sim_csv_str(const struct gt_sim_csv *c, size_t i, const char *what, char **out,
                   struct gt_err *err);

#endif
