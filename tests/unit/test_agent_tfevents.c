/*
 * The TensorBoard event reader (agent/tfevents.h) against real event files
 * from TensorFlow, PyTorch and other writers (../shared/fixtures/tfevents
 * relative to the project root, with their expected points; the test exits
 * 77 where that directory is absent): every fixture's points exactly, in
 * file order; the same points when a file is read while it grows, byte by
 * byte or in chunks, in memory and through a real file; a cut-off end
 * retried, never reported; a flipped byte in a length, a CRC or the data
 * and garbage between records each skip exactly the records they hit.
 * Synthetic records (made here by a small protobuf encoder) cover the TF2
 * tensor encodings, non-scalar tensors, malformed protobuf with valid CRCs,
 * over-long records and the bound on tags; they are also the fuzz corpus
 * (tests/fuzz/corpus/tfevents), which GT_TFEV_WRITE_CORPUS=DIR writes and
 * which this test checks is up to date.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/tfevents.h"

static const char *const fixtures[] = {
    "katib/test/events.out.tfevents.1637681485.2d662933d616.19.1.v2",
    "katib/train/events.out.tfevents.1637681485.2d662933d616.19.0.v2",
    "lingvo/events.out.tfevents.test",
    "tensorboard-reducer/duplicate_steps/run_1/"
    "events.out.tfevents.1622966509.janoshs-mbp.lan.86059.0",
    "tensorboard-reducer/strict/run_1/events.out.tfevents.1622543341.janoshs-mbp.lan.86862.0",
    "tensorboard/log_tayo/test/events.out.tfevents.1515280094.tayo-glaptop",
    "tfx/train/events.out.tfevents.1598485465.penguin.1486.6519.v2",
    "tfx/train/events.out.tfevents.1598485465.penguin.profile-empty",
    "tfx/validation/events.out.tfevents.1598485465.penguin.1486.7304.v2",
    "wandb/catboost_info/learn/events.out.tfevents",
    "wandb/events.out.tfevents.111.complex.localdomain",
    "wandb/events.out.tfevents.111.simple.localdomain",
    "wandb/events.out.tfevents.1585769947.cvp",
};

static char fixture_dir[4096];

/* One expected point: a line of expected/<file>.tsv. */
struct want {
    char tag[256];
    int64_t step;
    float value;
};

struct fixture {
    uint8_t *data;
    size_t len;
    struct want *want;
    size_t n_want;
};

static void fixture_load(const char *name, struct fixture *fx)
{
    char *path = gt_xasprintf("%s/%s", fixture_dir, name);
    char *text;
    struct gt_err err = {0};
    assert_int_equal(gt_file_read(path, 1u << 20, &text, &fx->len, &err), 0);
    fx->data = (uint8_t *)text;
    free(path);
    path = gt_xasprintf("%s/expected/%s.tsv", fixture_dir, name);
    size_t tsv_len;
    assert_int_equal(gt_file_read(path, 1u << 20, &text, &tsv_len, &err), 0);
    free(path);
    fx->n_want = 0;
    for (size_t i = 0; i < tsv_len; i++) {
        fx->n_want += text[i] == '\n';
    }
    fx->want = gt_xcalloc(fx->n_want + 1, sizeof(*fx->want));
    char *line = text;
    for (size_t i = 0; i < fx->n_want; i++) {
        char *nl = strchr(line, '\n');
        *nl = '\0';
        char *t1 = strchr(line, '\t');
        assert_non_null(t1);
        char *t2 = strchr(t1 + 1, '\t');
        assert_non_null(t2);
        snprintf(fx->want[i].tag, sizeof(fx->want[i].tag), "%.*s", (int)(t1 - line), line);
        fx->want[i].step = strtoll(t1 + 1, NULL, 10);
        fx->want[i].value = strtof(t2 + 1, NULL);
        line = nl + 1;
    }
    free(text);
}

static void fixture_free(struct fixture *fx)
{
    free(fx->data);
    free(fx->want);
}

static void check_points(const char *name, const struct gt_tfev_points *got, const struct want *w,
                         size_t n)
{
    if (got->n != n) {
        fail_msg("%s: %zu points, want %zu", name, got->n, n);
    }
    for (size_t i = 0; i < n; i++) {
        const struct gt_tfev_point *p = &got->v[i];
        if (strcmp(p->tag, w[i].tag) || p->step != w[i].step || (float)p->value != w[i].value) {
            fail_msg("%s: point %zu is %s %lld %.9g, want %s %lld %.9g", name, i, p->tag,
                     (long long)p->step, p->value, w[i].tag, (long long)w[i].step,
                     (double)w[i].value);
        }
    }
}

static void test_every_fixture(void **state)
{
    (void)state;
    size_t total = 0;
    for (size_t i = 0; i < GT_ARRAY_LEN(fixtures); i++) {
        struct fixture fx;
        fixture_load(fixtures[i], &fx);
        struct gt_tfev_reader r;
        gt_tfev_reader_init(&r);
        struct gt_tfev_points pts = {0};
        size_t used = gt_tfev_parse(&r, fixtures[i], 0, fx.data, fx.len, &pts);
        assert_int_equal(used, fx.len);
        assert_int_equal(r.n_corrupt, 0);
        check_points(fixtures[i], &pts, fx.want, fx.n_want);
        total += pts.n;
        GT_VEC_FREE(&pts);
        gt_tfev_reader_fini(&r);
        fixture_free(&fx);
    }
    assert_int_equal(total, 4239); /* the fixtures' README: 4,239 points in 13 files */
}

/* Parse data as if it grew by step bytes at a time (step 0: by a varying
 * amount), each time from the consumed offset; returns the points. */
static void parse_growing(const struct fixture *fx, size_t step, struct gt_tfev_reader *r,
                          struct gt_tfev_points *pts)
{
    size_t off = 0, end = 0;
    unsigned seed = 7;
    while (end < fx->len) {
        seed = seed * 1103515245u + 12345u;
        end += step ? step : 1 + (seed >> 16) % 97;
        if (end > fx->len) {
            end = fx->len;
        }
        off += gt_tfev_parse(r, "growing", (int64_t)off, fx->data + off, end - off, pts);
        assert_true(off <= end);
    }
    assert_int_equal(off, fx->len);
}

static void test_growing_in_memory(void **state)
{
    (void)state;
    for (size_t i = 0; i < GT_ARRAY_LEN(fixtures); i++) {
        struct fixture fx;
        fixture_load(fixtures[i], &fx);
        size_t steps[] = {1, 0, 4096};
        for (size_t s = 0; s < GT_ARRAY_LEN(steps); s++) {
            struct gt_tfev_reader r;
            gt_tfev_reader_init(&r);
            struct gt_tfev_points pts = {0};
            parse_growing(&fx, steps[s], &r, &pts);
            assert_int_equal(r.n_corrupt, 0); /* a cut-off end is waited for, not reported */
            check_points(fixtures[i], &pts, fx.want, fx.n_want);
            GT_VEC_FREE(&pts);
            gt_tfev_reader_fini(&r);
        }
        fixture_free(&fx);
    }
}

static void append_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* A real file written in pieces while it is polled, then replaced by a
 * shorter file at the same path (read again from the start). */
static void test_follow_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/gt-tfev-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = gt_xasprintf("%s/events.out.tfevents.1.test", dir);
    struct fixture fx;
    fixture_load(fixtures[3], &fx); /* duplicate_steps: 421 records */
    struct gt_tfev_file f;
    gt_tfev_file_init(&f, path);
    struct gt_tfev_points pts = {0};
    struct gt_err err = {0};
    assert_int_equal(gt_tfev_file_poll(&f, 0, &pts, &err), -ENOENT);
    assert_non_null(strstr(err.msg, "cannot open"));
    size_t written = 0;
    while (written < fx.len) {
        size_t n = fx.len - written < 333 ? fx.len - written : 333;
        append_file(path, fx.data + written, n);
        written += n;
        assert_int_equal(gt_tfev_file_poll(&f, 0, &pts, NULL), 0);
        assert_true(f.offset <= (int64_t)written && f.offset > (int64_t)written - 333);
    }
    assert_int_equal(f.offset, fx.len);
    assert_int_equal(gt_tfev_file_poll(&f, 0, &pts, NULL), 0); /* nothing new */
    check_points(fixtures[3], &pts, fx.want, fx.n_want);
    assert_int_equal(f.reader.n_corrupt, 0);

    struct fixture small;
    fixture_load(fixtures[9], &small); /* catboost: 598 bytes */
    assert_int_equal(unlink(path), 0);
    append_file(path, small.data, small.len);
    GT_VEC_FREE(&pts);
    assert_int_equal(gt_tfev_file_poll(&f, 0, &pts, NULL), 0);
    check_points(fixtures[9], &pts, small.want, small.n_want);
    assert_int_equal(f.offset, small.len);

    GT_VEC_FREE(&pts);
    gt_tfev_file_fini(&f);
    fixture_free(&small);
    fixture_free(&fx);
    unlink(path);
    rmdir(dir);
    free(path);
}

/* The records of a fixture: offset and size of each (framing included). */
struct rec {
    size_t off, len;
    size_t first_point, n_points;
};

static size_t records_of(const struct fixture *fx, struct rec *recs, size_t max)
{
    struct gt_tfev_reader r;
    gt_tfev_reader_init(&r);
    struct gt_tfev_points pts = {0};
    size_t n = 0, off = 0;
    while (off < fx->len) {
        const uint8_t *data;
        size_t data_len, used;
        assert_int_equal(
            gt_tfev_record_next(fx->data + off, fx->len - off, &used, &data, &data_len, NULL), 0);
        assert_true(n < max);
        recs[n].off = off;
        recs[n].len = used;
        recs[n].first_point = pts.n;
        assert_int_equal(gt_tfev_event_decode(&r, data, data_len, &pts, NULL), 0);
        recs[n].n_points = pts.n - recs[n].first_point;
        n++;
        off += used;
    }
    GT_VEC_FREE(&pts);
    gt_tfev_reader_fini(&r);
    return n;
}

/* The expected points without those of record k. */
static size_t want_without(const struct fixture *fx, const struct rec *k, struct want *out)
{
    size_t n = 0;
    for (size_t i = 0; i < fx->n_want; i++) {
        if (i < k->first_point || i >= k->first_point + k->n_points) {
            out[n++] = fx->want[i];
        }
    }
    return n;
}

typedef void fixture_fn(const char *name, const struct fixture *fx, const struct rec *recs,
                        size_t n);

/* Call fn for every fixture with its records. */
static void each_fixture(fixture_fn *fn)
{
    static struct rec recs[1024];
    for (size_t i = 0; i < GT_ARRAY_LEN(fixtures); i++) {
        struct fixture fx;
        fixture_load(fixtures[i], &fx);
        fn(fixtures[i], &fx, recs, records_of(&fx, recs, GT_ARRAY_LEN(recs)));
        fixture_free(&fx);
    }
}

/* A fixture cut at many offsets: the points of the whole records before
 * the cut, nothing reported, and the cut record left unconsumed. */
static void check_cuts(const char *name, const struct fixture *fx, const struct rec *recs, size_t n)
{
    size_t stride = fx->len > 30000 ? 509 : 1;
    for (size_t cut = 0; cut < fx->len; cut += stride) {
        size_t whole = 0;
        while (whole < n && recs[whole].off + recs[whole].len <= cut) {
            whole++;
        }
        struct gt_tfev_reader r;
        gt_tfev_reader_init(&r);
        struct gt_tfev_points pts = {0};
        size_t used = gt_tfev_parse(&r, "cut", 0, fx->data, cut, &pts);
        assert_int_equal(used, whole ? recs[whole - 1].off + recs[whole - 1].len : 0);
        assert_int_equal(r.n_corrupt, 0);
        size_t n_want = whole ? recs[whole - 1].first_point + recs[whole - 1].n_points : 0;
        check_points(name, &pts, fx->want, n_want);
        GT_VEC_FREE(&pts);
        gt_tfev_reader_fini(&r);
    }
}

static void test_truncated(void **state)
{
    (void)state;
    each_fixture(check_cuts);
}

/* A copy of fx with one byte of record k flipped at offset at inside it:
 * the record is reported and skipped, every other point read. */
static void check_flip(const char *name, const struct fixture *fx, const struct rec *k, size_t at)
{
    /* A bad length in the last record: its last 11 bytes may yet begin a
     * header, so they wait for more data. */
    int last = k->off + k->len == fx->len;
    size_t want_used = last && at < 12 ? fx->len - 11 : fx->len;
    uint8_t *copy = gt_xmalloc(fx->len);
    memcpy(copy, fx->data, fx->len);
    copy[k->off + at] ^= 0x20;
    struct gt_tfev_reader r;
    gt_tfev_reader_init(&r);
    struct gt_tfev_points pts = {0};
    size_t used = gt_tfev_parse(&r, name, 0, copy, fx->len, &pts);
    assert_int_equal(used, want_used);
    assert_int_equal(r.n_corrupt, 1);
    struct want *w = gt_xcalloc(fx->n_want + 1, sizeof(*w));
    size_t n = want_without(fx, k, w);
    check_points(name, &pts, w, n);
    free(w);
    GT_VEC_FREE(&pts);
    gt_tfev_reader_fini(&r);
    free(copy);
}

/* In some records of a fixture, flip a byte of the length, its CRC, the
 * data and the data's CRC in turn. */
static void check_flips(const char *name, const struct fixture *fx, const struct rec *recs,
                        size_t n)
{
    for (size_t k = 0; k < n; k += (n > 20 ? n / 7 : 1)) {
        const struct rec *rc = &recs[k];
        check_flip(name, fx, rc, 0);
        check_flip(name, fx, rc, 9);
        check_flip(name, fx, rc, 12 + (rc->len - 16) / 2);
        check_flip(name, fx, rc, rc->len - 1);
    }
}

static void test_corrupt_byte(void **state)
{
    (void)state;
    each_fixture(check_flips);
}

/* Garbage between two records (a torn write) is skipped as one run. */
static void test_garbage_between_records(void **state)
{
    (void)state;
    static struct rec recs[1024];
    struct fixture fx;
    fixture_load(fixtures[4], &fx); /* strict: 101 records */
    size_t n = records_of(&fx, recs, GT_ARRAY_LEN(recs));
    size_t at = recs[n / 2].off;
    static const size_t glen[] = {1, 11, 12, 13, 100};
    for (size_t g = 0; g < GT_ARRAY_LEN(glen); g++) {
        size_t len = fx.len + glen[g];
        uint8_t *buf = gt_xmalloc(len);
        memcpy(buf, fx.data, at);
        for (size_t j = 0; j < glen[g]; j++) {
            buf[at + j] = (uint8_t)(0x5a + 31 * j);
        }
        memcpy(buf + at + glen[g], fx.data + at, fx.len - at);
        struct gt_tfev_reader r;
        gt_tfev_reader_init(&r);
        struct gt_tfev_points pts = {0};
        assert_int_equal(gt_tfev_parse(&r, "garbage", 0, buf, len, &pts), len);
        assert_int_equal(r.n_corrupt, 1);
        check_points(fixtures[4], &pts, fx.want, fx.n_want);
        GT_VEC_FREE(&pts);
        gt_tfev_reader_fini(&r);
        free(buf);
    }
    fixture_free(&fx);
}

/* ---- synthetic records: a small protobuf encoder ---- */

static void put_varint(struct gt_buf *b, uint64_t v)
{
    uint8_t c[10];
    size_t n = 0;
    do {
        c[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        c[n] |= v ? 0x80 : 0;
        n++;
    } while (v);
    gt_buf_append(b, c, n);
}

static void put_key(struct gt_buf *b, unsigned num, unsigned wt)
{
    put_varint(b, (uint64_t)num << 3 | wt);
}

static void put_bytes(struct gt_buf *b, unsigned num, const void *p, size_t len)
{
    put_key(b, num, 2);
    put_varint(b, len);
    gt_buf_append(b, p, len);
}

static void put_sub(struct gt_buf *b, unsigned num, struct gt_buf *sub)
{
    put_bytes(b, num, sub->data, sub->len);
    gt_buf_fini(sub);
    gt_buf_init(sub);
}

static void put_f32(struct gt_buf *b, unsigned num, float v)
{
    put_key(b, num, 5);
    gt_buf_append(b, &v, 4);
}

static void put_f64(struct gt_buf *b, unsigned num, double v)
{
    put_key(b, num, 1);
    gt_buf_append(b, &v, 8);
}

/* How a synthetic value carries its number. */
enum enc {
    ENC_SIMPLE,        /* simple_value */
    ENC_CONTENT_F32,   /* DT_FLOAT tensor_content */
    ENC_CONTENT_F64,   /* DT_DOUBLE tensor_content */
    ENC_FLOAT_VAL,     /* DT_FLOAT float_val, not packed */
    ENC_FLOAT_PACKED,  /* DT_FLOAT float_val, packed */
    ENC_DOUBLE_PACKED, /* DT_DOUBLE double_val, packed, shape [1] */
    ENC_TWO_ELEMS,     /* DT_FLOAT shape [2]: not a scalar */
    ENC_STRING,        /* DT_STRING: not a scalar */
};

/* One Summary.Value; plugin NULL for no metadata. */
static void put_value(struct gt_buf *b, const char *tag, const char *plugin, enum enc e, double v)
{
    struct gt_buf val, sub, sub2;
    gt_buf_init(&val);
    gt_buf_init(&sub);
    gt_buf_init(&sub2);
    put_bytes(&val, 1, tag, strlen(tag));
    if (plugin) {
        put_bytes(&sub2, 1, plugin, strlen(plugin));
        put_sub(&sub, 1, &sub2);
        put_sub(&val, 9, &sub);
    }
    float f = (float)v;
    if (e == ENC_SIMPLE) {
        put_f32(&val, 2, f);
    } else {
        put_key(&sub, 1, 0);
        put_varint(&sub, e == ENC_CONTENT_F64 || e == ENC_DOUBLE_PACKED ? 2
                         : e == ENC_STRING                              ? 7
                                                                        : 1);
        if (e == ENC_DOUBLE_PACKED || e == ENC_TWO_ELEMS) {
            put_key(&sub2, 2, 2);
            put_varint(&sub2, 2);
            put_key(&sub2, 1, 0);
            put_varint(&sub2, e == ENC_TWO_ELEMS ? 2 : 1);
            put_sub(&sub, 2, &sub2);
        }
        if (e == ENC_CONTENT_F32 || e == ENC_TWO_ELEMS) {
            float two[2] = {f, f};
            put_bytes(&sub, 4, two, e == ENC_TWO_ELEMS ? 8 : 4);
        } else if (e == ENC_CONTENT_F64) {
            put_bytes(&sub, 4, &v, 8);
        } else if (e == ENC_FLOAT_VAL) {
            put_f32(&sub, 5, f);
        } else if (e == ENC_FLOAT_PACKED) {
            put_bytes(&sub, 5, &f, 4);
        } else if (e == ENC_DOUBLE_PACKED) {
            put_bytes(&sub, 6, &v, 8);
        } else {
            put_bytes(&sub, 8, "graph", 5);
        }
        put_sub(&val, 8, &sub);
    }
    put_sub(b, 1, &val);
    gt_buf_fini(&sub);
    gt_buf_fini(&sub2);
}

/* An Event with a summary; the step goes after it when late (fields in any order). */
static void put_event(struct gt_buf *rec, double wall_time, int64_t step, int late,
                      struct gt_buf *summary)
{
    struct gt_buf ev;
    gt_buf_init(&ev);
    put_f64(&ev, 1, wall_time);
    if (step && !late) {
        put_key(&ev, 2, 0);
        put_varint(&ev, (uint64_t)step);
    }
    put_sub(&ev, 5, summary);
    if (step && late) {
        put_key(&ev, 2, 0);
        put_varint(&ev, (uint64_t)step);
    }
    uint64_t n = ev.len;
    uint8_t hdr[12];
    memcpy(hdr, &n, 8);
    uint32_t c = gt_tfev_crc_mask(gt_tfev_crc32c(hdr, 8));
    memcpy(hdr + 8, &c, 4);
    gt_buf_append(rec, hdr, 12);
    gt_buf_append(rec, ev.data, ev.len);
    c = gt_tfev_crc_mask(gt_tfev_crc32c(ev.data, ev.len));
    gt_buf_append(rec, &c, 4);
    gt_buf_fini(&ev);
}

/* The synthetic stream and the points it must give. */
struct synth {
    struct gt_buf b;
    struct want w[32];
    size_t n_want;
};

/* Fill sy (the caller frees sy->b with gt_buf_fini): every encoding. */
static void synthetic_stream(struct synth *sy)
{
    gt_buf_init(&sy->b);
    struct gt_buf s;
    gt_buf_init(&s);
    sy->n_want = 0;
    static const struct {
        const char *tag, *plugin;
        enum enc e;
        double v;
        int scalar;
    } vals[] = {
        {"loss", NULL, ENC_SIMPLE, 0.5, 1},
        {"tf2/acc", "scalars", ENC_CONTENT_F32, 0.875, 1},
        {"tf2/lr", "scalars", ENC_CONTENT_F64, 1e-300, 1},
        {"tf2/f", "scalars", ENC_FLOAT_VAL, -3.25, 1},
        {"tf2/fp", "scalars", ENC_FLOAT_PACKED, 7, 1},
        {"tf2/dp", "scalars", ENC_DOUBLE_PACKED, 2.5, 1},
        {"tf2/vec", "scalars", ENC_TWO_ELEMS, 1, 0},
        {"keras", "graph_keras_model", ENC_STRING, 0, 0},
        {"hist", "histograms", ENC_CONTENT_F64, 4, 0},
        {"tf2/acc", NULL, ENC_CONTENT_F32, 0.9375, 1}, /* plugin remembered from the first */
        {"nometa", NULL, ENC_CONTENT_F32, 1, 0},       /* no plugin: not a scalar */
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(vals); i++) {
        put_value(&s, vals[i].tag, vals[i].plugin, vals[i].e, vals[i].v);
        int64_t step = (int64_t)i * 1000000007;
        put_event(&sy->b, 1.6e9 + (double)i, step, (int)(i & 1), &s);
        if (vals[i].scalar) {
            struct want *w = &sy->w[sy->n_want++];
            snprintf(w->tag, sizeof(w->tag), "%s", vals[i].tag);
            w->step = step;
            w->value = (float)vals[i].v;
        }
    }
    gt_buf_fini(&s);
}

static void test_synthetic_encodings(void **state)
{
    (void)state;
    struct synth sy;
    synthetic_stream(&sy);
    struct gt_tfev_reader r;
    gt_tfev_reader_init(&r);
    struct gt_tfev_points pts = {0};
    assert_int_equal(gt_tfev_parse(&r, "synthetic", 0, (uint8_t *)sy.b.data, sy.b.len, &pts),
                     sy.b.len);
    assert_int_equal(r.n_corrupt, 0);
    check_points("synthetic", &pts, sy.w, sy.n_want);
    assert_true(pts.v[2].value == 1e-300); /* DT_DOUBLE kept as a double */
    assert_true(pts.v[1].wall_time == 1.6e9 + 1);
    GT_VEC_FREE(&pts);
    gt_tfev_reader_fini(&r);
    gt_buf_fini(&sy.b);
}

/* Past GT_TFEV_TAGS_MAX tags, values of new tags are dropped and counted;
 * the tags already kept still get their points. */
static void test_tag_limit(void **state)
{
    (void)state;
    struct gt_buf b, s;
    gt_buf_init(&b);
    gt_buf_init(&s);
    for (unsigned i = 0; i < GT_TFEV_TAGS_MAX + 5; i++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "t%u", i);
        put_value(&s, tag, NULL, ENC_SIMPLE, i);
        put_value(&s, "t0", NULL, ENC_SIMPLE, 1);
        put_event(&b, 0, i, 0, &s);
    }
    struct gt_tfev_reader r;
    gt_tfev_reader_init(&r);
    struct gt_tfev_points pts = {0};
    assert_int_equal(gt_tfev_parse(&r, "tags", 0, (uint8_t *)b.data, b.len, &pts), b.len);
    assert_int_equal(pts.n, 2 * (GT_TFEV_TAGS_MAX + 5) - 5);
    assert_int_equal(r.n_dropped, 5);
    assert_int_equal(r.tags.n, GT_TFEV_TAGS_MAX);
    assert_string_equal(pts.v[pts.n - 1].tag, "t0");
    GT_VEC_FREE(&pts);
    gt_tfev_reader_fini(&r);
    gt_buf_fini(&s);
    gt_buf_fini(&b);
}

/* A record whose CRCs check but whose Event is malformed is reported with
 * the field; an over-long record is skipped by its length. */
static void test_malformed_event(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t len;
        const char *msg;
    } bad[] = {
        {"\x10\x80", 2, "Event: truncated varint"},
        {"\x2a\x05\x0a\x03\x0a\x05x", 7, "Summary.Value: field 1 runs past the end"},
        {"\x2a\x02\x0b\x00", 4, "Summary: field 1 has unsupported wire type 3"},
        {"\x09\x00\x00", 3, "Event: field 1 truncated"},
        {"\x2a\x0c\x0a\x0a\x0a\x01t\x42\x05\x2a\x03\x01\x02\x03", 14,
         "TensorProto: field 5 is malformed"},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        struct gt_tfev_reader r;
        gt_tfev_reader_init(&r);
        struct gt_tfev_points pts = {0};
        struct gt_err err = {0};
        assert_int_equal(
            gt_tfev_event_decode(&r, (const uint8_t *)bad[i].bytes, bad[i].len, &pts, &err),
            GT_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
        assert_int_equal(pts.n, 0);
        gt_tfev_reader_fini(&r);
    }
    uint8_t hdr[12];
    uint64_t n = GT_TFEV_RECORD_MAX + 1ull;
    memcpy(hdr, &n, 8);
    uint32_t c = gt_tfev_crc_mask(gt_tfev_crc32c(hdr, 8));
    memcpy(hdr + 8, &c, 4);
    size_t used;
    const uint8_t *data;
    size_t data_len;
    struct gt_err err = {0};
    assert_int_equal(gt_tfev_record_next(hdr, sizeof(hdr), &used, &data, &data_len, &err),
                     GT_EINVAL);
    assert_int_equal(used, n + GT_TFEV_FRAMING);
    assert_non_null(strstr(err.msg, "over the maximum"));
}

/* CRC-32C check values (RFC 3720, B.4) and TFRecord's mask. */
static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(gt_tfev_crc32c("123456789", 9), 0xe3069283u);
    uint8_t zeros[32] = {0};
    assert_int_equal(gt_tfev_crc32c(zeros, 32), 0x8a9136aau);
    assert_int_equal(gt_tfev_crc_mask(0), 0xa282ead8u);
}

/* The fuzz corpus: the synthetic stream, each record alone, and cut and
 * corrupted forms of it. Written to $GT_TFEV_WRITE_CORPUS when set;
 * otherwise the checked-in corpus must hold exactly these files. */
static void test_fuzz_corpus(void **state)
{
    (void)state;
    struct synth sy;
    synthetic_stream(&sy);
    struct {
        char name[32];
        size_t off, len;
        int flip;
    } files[40];
    size_t nf = 0;
    size_t off = 0;
    while (off < sy.b.len) {
        size_t used;
        const uint8_t *data;
        size_t data_len;
        assert_int_equal(gt_tfev_record_next((uint8_t *)sy.b.data + off, sy.b.len - off, &used,
                                             &data, &data_len, NULL),
                         0);
        snprintf(files[nf].name, sizeof(files[nf].name), "record-%02zu", nf);
        files[nf].off = off;
        files[nf].len = used;
        files[nf].flip = -1;
        nf++;
        off += used;
    }
    static const struct {
        const char *name;
        size_t cut;
        int flip;
    } more[] = {{"stream", 0, -1},
                {"stream-cut", 7, -1},
                {"stream-flip-len", 0, 0},
                {"stream-flip-data", 0, 20}};
    for (size_t i = 0; i < GT_ARRAY_LEN(more); i++) {
        snprintf(files[nf].name, sizeof(files[nf].name), "%s", more[i].name);
        files[nf].off = 0;
        files[nf].len = sy.b.len - more[i].cut;
        files[nf].flip = more[i].flip;
        nf++;
    }
    const char *out = getenv("GT_TFEV_WRITE_CORPUS");
    const char *src = getenv("GANTRY_SOURCE_DIR");
    char *dir =
        out ? gt_xstrdup(out) : gt_xasprintf("%s/tests/fuzz/corpus/tfevents", src ? src : ".");
    for (size_t i = 0; i < nf; i++) {
        uint8_t *bytes = gt_xmalloc(files[i].len);
        memcpy(bytes, sy.b.data + files[i].off, files[i].len);
        if (files[i].flip >= 0) {
            bytes[files[i].flip] ^= 0x01;
        }
        char *path = gt_xasprintf("%s/%s", dir, files[i].name);
        if (out) {
            unlink(path);
            append_file(path, bytes, files[i].len);
        } else {
            char *have;
            size_t have_len;
            struct gt_err err = {0};
            if (gt_file_read(path, 1u << 20, &have, &have_len, &err) != 0) {
                fail_msg("%s (run with GT_TFEV_WRITE_CORPUS=tests/fuzz/corpus/tfevents)", err.msg);
            }
            assert_int_equal(have_len, files[i].len);
            assert_memory_equal(have, bytes, have_len);
            free(have);
        }
        free(path);
        free(bytes);
    }
    free(dir);
    gt_buf_fini(&sy.b);
}

int main(void)
{
    const char *src = getenv("GANTRY_SOURCE_DIR");
    snprintf(fixture_dir, sizeof(fixture_dir), "%s/../shared/fixtures/tfevents", src ? src : ".");
    struct stat st;
    if (stat(fixture_dir, &st) != 0) {
        fprintf(stderr, "%s is absent: skipped\n", fixture_dir);
        return 77;
    }
    gt_log_set_level(GT_LOG_ERROR); /* the skipped records' warnings */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_every_fixture),
        cmocka_unit_test(test_growing_in_memory),
        cmocka_unit_test(test_follow_file),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_corrupt_byte),
        cmocka_unit_test(test_garbage_between_records),
        cmocka_unit_test(test_synthetic_encodings),
        cmocka_unit_test(test_tag_limit),
        cmocka_unit_test(test_malformed_event),
        cmocka_unit_test(test_fuzz_corpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
