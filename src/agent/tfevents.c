/*
 * The pure half of the TensorBoard event reader (see tfevents.h): TFRecord
 * framing with masked CRC-32C, and a hand-written protobuf wire-format
 * reader for the few fields of Event, Summary, SummaryMetadata and
 * TensorProto that scalars need. No I/O here: bytes in, points out.
 *
 * Every read is bounds-checked against the end of its message; a message
 * that runs past its end, a truncated varint or an unknown wire type is an
 * error for the whole record (its points are dropped), never a crash. A
 * protobuf library (libprotobuf-c) was not used: it needs code generated
 * from TensorBoard's .proto files and would decode whole images and graphs
 * only to throw them away, where this reader skips them by length.
 */
#include <errno.h>
#include <string.h>

#include "agent/tfevents.h"

/* ---- CRC-32C ---- */

/* Slicing-by-8 tables for the reflected Castagnoli polynomial, computed on
 * first use (a pure function of the polynomial, so racing inits agree). */
static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        }
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++) {
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
        }
    }
    __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t gt_tfev_crc32c(const void *data, size_t len)
{
    if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) {
        crc_init();
    }
    const uint8_t *p = data;
    uint32_t c = 0xffffffffu;
    while (len >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
            crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
            crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--) {
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    }
    return c ^ 0xffffffffu;
}

uint32_t gt_tfev_crc_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- framing ---- */

/* Whether a 12-byte record header at p has a matching length CRC. */
static int header_ok(const uint8_t *p)
{
    return gt_tfev_crc_mask(gt_tfev_crc32c(p, 8)) == le32(p + 8);
}

int gt_tfev_record_next(const uint8_t *buf, size_t len, size_t *used, const uint8_t **data,
                        size_t *data_len, struct gt_err *err)
{
    *used = 0;
    if (len < 12) {
        return -EAGAIN;
    }
    if (!header_ok(buf)) {
        /* The length cannot be trusted: resynchronise on the next header
         * that checks (a false match is caught by the data CRC). */
        size_t k = 1;
        while (k + 12 <= len && !header_ok(buf + k)) {
            k++;
        }
        *used = k;
        return gt_err_set(err, GT_EINVAL, "length CRC mismatch, skipped %zu bytes", k);
    }
    uint64_t n = le64(buf);
    if (n > GT_TFEV_RECORD_MAX) {
        *used = (size_t)n + GT_TFEV_FRAMING;
        return gt_err_set(err, GT_EINVAL, "record of %llu bytes over the maximum of %u",
                          (unsigned long long)n, GT_TFEV_RECORD_MAX);
    }
    if (len - 12 < n + 4) {
        return -EAGAIN;
    }
    *used = (size_t)n + GT_TFEV_FRAMING;
    if (gt_tfev_crc_mask(gt_tfev_crc32c(buf + 12, (size_t)n)) != le32(buf + 12 + n)) {
        return gt_err_set(err, GT_EINVAL, "data CRC mismatch in a record of %llu bytes",
                          (unsigned long long)n);
    }
    *data = buf + 12;
    *data_len = (size_t)n;
    return 0;
}

/* ---- protobuf wire format ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* A message being read: [p, end). what names it in errors. */
struct pb {
    const uint8_t *p, *end;
    const char *what;
};

/* One field as read: its number, wire type and payload. */
struct pb_field {
    uint32_t num;
    int wt;
    uint64_t u;    /* WT_VARINT, WT_I64, WT_I32 */
    struct pb sub; /* WT_LEN: the payload */
};

static int pb_varint(struct pb *m, uint64_t *v, struct gt_err *err)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (m->p == m->end) {
            return gt_err_set(err, GT_EINVAL, "%s: truncated varint", m->what);
        }
        uint8_t b = *m->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return gt_err_set(err, GT_EINVAL, "%s: varint over 10 bytes", m->what);
}

/* Read the next field of m into f; 1 at the end of m, 0 for a field, or
 * GT_EINVAL. Payloads are checked to lie within m. */
static int pb_next(struct pb *m, struct pb_field *f, struct gt_err *err)
{
    if (m->p == m->end) {
        return 1;
    }
    uint64_t key;
    int rc = pb_varint(m, &key, err);
    if (rc != 0) {
        return rc;
    }
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    size_t left;
    switch (f->wt) {
    case WT_VARINT:
        return pb_varint(m, &f->u, err);
    case WT_I64:
    case WT_I32:
        left = (size_t)(m->end - m->p);
        if (left < (f->wt == WT_I64 ? 8u : 4u)) {
            return gt_err_set(err, GT_EINVAL, "%s: field %u truncated", m->what, f->num);
        }
        f->u = f->wt == WT_I64 ? le64(m->p) : le32(m->p);
        m->p += f->wt == WT_I64 ? 8 : 4;
        return 0;
    case WT_LEN:
        rc = pb_varint(m, &f->u, err);
        if (rc != 0) {
            return rc;
        }
        if (f->u > (uint64_t)(m->end - m->p)) {
            return gt_err_set(err, GT_EINVAL, "%s: field %u runs past the end", m->what, f->num);
        }
        f->sub.p = m->p;
        f->sub.end = m->p + f->u;
        m->p += f->u;
        return 0;
    default:
        return gt_err_set(err, GT_EINVAL, "%s: field %u has unsupported wire type %d", m->what,
                          f->num, f->wt);
    }
}

static float f32_of(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static double f64_of(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

/* ---- Event, Summary, TensorProto (tensorboard/compat/proto) ---- */

enum { DT_FLOAT = 1, DT_DOUBLE = 2 };

/* What a tag has declared: known once a value of it carried metadata. */
struct tfev_tag {
    char *name;
    int has_plugin;
    int is_scalars;
};

static void tag_free(void *p)
{
    struct tfev_tag *t = p;
    free(t->name);
    free(t);
}

void gt_tfev_reader_init(struct gt_tfev_reader *r)
{
    memset(r, 0, sizeof(*r));
    gt_strmap_init(&r->tags);
}

void gt_tfev_reader_fini(struct gt_tfev_reader *r)
{
    gt_strmap_fini(&r->tags, tag_free);
}

/* The entry of tag (len bytes, may hold NULs: cut at the first), added if
 * new; NULL when it is new and the reader holds GT_TFEV_TAGS_MAX tags. */
static struct tfev_tag *tag_get(struct gt_tfev_reader *r, const uint8_t *s, size_t len)
{
    char *key = gt_xstrndup((const char *)s, len);
    struct tfev_tag *t = gt_strmap_get(&r->tags, key);
    if (t || r->tags.n >= GT_TFEV_TAGS_MAX) {
        free(key);
        return t;
    }
    t = gt_xcalloc(1, sizeof(*t));
    t->name = key;
    gt_strmap_put(&r->tags, key, t);
    return t;
}

/* SummaryMetadata: is plugin_data.plugin_name "scalars"? */
static int metadata_decode(struct pb m, int *is_scalars, struct gt_err *err)
{
    struct pb_field f;
    int rc;
    m.what = "SummaryMetadata";
    *is_scalars = 0;
    while ((rc = pb_next(&m, &f, err)) == 0) {
        if (f.num != 1 || f.wt != WT_LEN) {
            continue;
        }
        struct pb pd = f.sub;
        pd.what = "SummaryMetadata.plugin_data";
        struct pb_field g;
        while ((rc = pb_next(&pd, &g, err)) == 0) {
            if (g.num == 1 && g.wt == WT_LEN) {
                *is_scalars = g.u == 7 && memcmp(g.sub.p, "scalars", 7) == 0;
            }
        }
        if (rc < 0) {
            return rc;
        }
    }
    return rc < 0 ? rc : 0;
}

/* TensorShapeProto: the number of elements (product of dim sizes; 1 for
 * rank 0), or -1 for an unknown rank or a negative size. */
static int shape_elems(struct pb m, int64_t *n, struct gt_err *err)
{
    struct pb_field f;
    int rc;
    m.what = "TensorShapeProto";
    *n = 1;
    while ((rc = pb_next(&m, &f, err)) == 0) {
        if (f.num == 3 && f.wt == WT_VARINT && f.u) {
            *n = -1;
        } else if (f.num == 2 && f.wt == WT_LEN) {
            struct pb d = f.sub;
            d.what = "TensorShapeProto.dim";
            struct pb_field g;
            int64_t size = 0;
            while ((rc = pb_next(&d, &g, err)) == 0) {
                if (g.num == 1 && g.wt == WT_VARINT) {
                    size = (int64_t)g.u;
                }
            }
            if (rc < 0) {
                return rc;
            }
            if (size < 0 || *n < 0) {
                *n = -1;
            } else if (size != 1) {
                *n = size == 0 ? 0 : 2; /* anything but one element is not a scalar */
            }
        }
    }
    return rc < 0 ? rc : 0;
}

/* Count and take the values of a float_val (5) or double_val (6) field,
 * packed or not: *count grows, *last is the last value. */
static int take_vals(const struct pb_field *f, int is_double, int64_t *count, double *last,
                     struct gt_err *err)
{
    size_t w = is_double ? 8 : 4;
    if (f->wt == (is_double ? WT_I64 : WT_I32)) {
        *last = is_double ? f64_of(f->u) : (double)f32_of((uint32_t)f->u);
        (*count)++;
        return 0;
    }
    if (f->wt != WT_LEN || (size_t)(f->sub.end - f->sub.p) % w) {
        return gt_err_set(err, GT_EINVAL, "TensorProto: field %u is malformed", f->num);
    }
    size_t n = (size_t)(f->sub.end - f->sub.p) / w;
    if (n) {
        const uint8_t *p = f->sub.end - w;
        *last = is_double ? f64_of(le64(p)) : (double)f32_of(le32(p));
        *count += (int64_t)n;
    }
    return 0;
}

/* TensorProto holding one DT_FLOAT or DT_DOUBLE element: 1 and *value;
 * 0 for any other tensor. */
static int tensor_scalar(struct pb m, double *value, struct gt_err *err)
{
    struct pb_field f;
    int rc;
    uint64_t dtype = 0;
    int64_t elems = 1, n_vals = 0;
    const uint8_t *content = NULL;
    size_t content_len = 0;
    double v = 0;
    m.what = "TensorProto";
    while ((rc = pb_next(&m, &f, err)) == 0) {
        if (f.num == 1 && f.wt == WT_VARINT) {
            dtype = f.u;
        } else if (f.num == 2 && f.wt == WT_LEN) {
            rc = shape_elems(f.sub, &elems, err);
        } else if (f.num == 4 && f.wt == WT_LEN) {
            content = f.sub.p;
            content_len = f.u;
        } else if (f.num == 5 || f.num == 6) {
            rc = take_vals(&f, f.num == 6, &n_vals, &v, err);
        }
        if (rc < 0) {
            return rc;
        }
    }
    if (rc < 0) {
        return rc;
    }
    if (elems != 1 || (dtype != DT_FLOAT && dtype != DT_DOUBLE)) {
        return 0;
    }
    size_t w = dtype == DT_DOUBLE ? 8 : 4;
    if (content) {
        if (content_len != w) {
            return 0;
        }
        *value = w == 8 ? f64_of(le64(content)) : (double)f32_of(le32(content));
        return 1;
    }
    if (n_vals < 1) {
        return 0;
    }
    *value = v; /* TensorFlow repeats the last value to fill the shape */
    return 1;
}

/* Summary.Value: append a point when it is a scalar. */
static int value_decode(struct gt_tfev_reader *r, struct pb m, int64_t step, double wall_time,
                        struct gt_tfev_points *out, struct gt_err *err)
{
    struct pb_field f;
    int rc;
    const uint8_t *tag = NULL;
    size_t tag_len = 0;
    int has_simple = 0, has_meta = 0, meta_scalars = 0;
    float simple = 0;
    struct pb tensor = {0};
    int has_tensor = 0;
    m.what = "Summary.Value";
    while ((rc = pb_next(&m, &f, err)) == 0) {
        if (f.num == 1 && f.wt == WT_LEN) {
            tag = f.sub.p;
            tag_len = f.u;
        } else if (f.num == 2 && f.wt == WT_I32) {
            has_simple = 1;
            simple = f32_of((uint32_t)f.u);
        } else if (f.num == 8 && f.wt == WT_LEN) {
            has_tensor = 1;
            tensor = f.sub;
        } else if (f.num == 9 && f.wt == WT_LEN) {
            has_meta = 1;
            rc = metadata_decode(f.sub, &meta_scalars, err);
        }
        if (rc < 0) {
            return rc;
        }
    }
    if (rc < 0) {
        return rc;
    }
    double v = simple;
    if (!tag || (!has_simple && !has_tensor)) {
        return 0;
    }
    struct tfev_tag *t = tag_get(r, tag, tag_len);
    if (!t) {
        r->n_dropped++;
        return 0;
    }
    if (has_meta && !t->has_plugin) {
        t->has_plugin = 1;
        t->is_scalars = meta_scalars;
    }
    if (!has_simple) {
        rc = tensor_scalar(tensor, &v, err);
        if (rc <= 0 || !t->is_scalars) {
            return rc;
        }
    }
    struct gt_tfev_point *pt = GT_VEC_PUSH(out, 64);
    pt->tag = t->name;
    pt->step = step;
    pt->wall_time = wall_time;
    pt->value = v;
    return 0;
}

int gt_tfev_event_decode(struct gt_tfev_reader *r, const uint8_t *data, size_t len,
                         struct gt_tfev_points *out, struct gt_err *err)
{
    struct pb m = {data, data + len, "Event"};
    struct pb_field f;
    int rc;
    int64_t step = 0;
    double wall_time = 0;
    struct pb summary = {0};
    int has_summary = 0;
    /* The step and time may follow the summary on the wire: find them first. */
    while ((rc = pb_next(&m, &f, err)) == 0) {
        if (f.num == 1 && f.wt == WT_I64) {
            wall_time = f64_of(f.u);
        } else if (f.num == 2 && f.wt == WT_VARINT) {
            step = (int64_t)f.u;
        } else if (f.num == 5 && f.wt == WT_LEN) {
            has_summary = 1;
            summary = f.sub;
        }
    }
    if (rc < 0) {
        return rc;
    }
    r->n_records++;
    if (!has_summary) {
        return 0;
    }
    size_t n0 = out->n;
    summary.what = "Summary";
    while ((rc = pb_next(&summary, &f, err)) == 0) {
        if (f.num == 1 && f.wt == WT_LEN) {
            rc = value_decode(r, f.sub, step, wall_time, out, err);
            if (rc < 0) {
                break;
            }
        }
    }
    if (rc < 0) {
        out->n = n0;
        return rc;
    }
    return 0;
}

size_t gt_tfev_parse(struct gt_tfev_reader *r, const char *name, int64_t base, const uint8_t *buf,
                     size_t len, struct gt_tfev_points *out)
{
    size_t pos = 0;
    while (pos < len) {
        const uint8_t *data;
        size_t data_len, used;
        struct gt_err err = {0};
        int rc = gt_tfev_record_next(buf + pos, len - pos, &used, &data, &data_len, &err);
        if (rc == -EAGAIN) {
            break;
        }
        if (rc == 0) {
            rc = gt_tfev_event_decode(r, data, data_len, out, &err);
        }
        if (rc != 0) {
            r->n_corrupt++;
            gt_log_warn("tfevents record skipped", "file=\"%s\" offset=%lld error=\"%s\"", name,
                        (long long)(base + (int64_t)pos), err.msg);
        }
        pos += used;
    }
    return pos;
}
