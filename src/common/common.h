/*
 * common: the base every other subsystem builds on.
 *
 * Allocation that aborts on out-of-memory, always-on assertions, error codes
 * with their HTTP mapping, context-carrying errors, logfmt logging, clocks,
 * checked int64 arithmetic, a growable byte buffer, growable arrays and
 * bounded whole-file reads. Resource quantities
 * and the JSON/YAML helpers have headers of their own, included here, so a
 * user of common includes only this file.
 */
#ifndef GT_COMMON_H
#define GT_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- allocation: out of memory aborts (as Redis and crun do) ---- */

/* Allocate n bytes; never returns NULL. Caller frees with free(). */
void *gt_xmalloc(size_t n);
/* Allocate and zero nmemb*size bytes (overflow-checked); never NULL. */
void *gt_xcalloc(size_t nmemb, size_t size);
/* Resize p to n bytes; never NULL. */
void *gt_xrealloc(void *p, size_t n);
/* Duplicate a string (NULL gives NULL). Caller frees. */
char *gt_xstrdup(const char *s);
/* Duplicate at most n bytes of s and NUL-terminate. Caller frees. */
char *gt_xstrndup(const char *s, size_t n);
/* printf into a new heap string. Caller frees. */
char *gt_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Always-on assertion: prints file:line and the expression, then aborts. */
#define GT_ASSERT(e) ((e) ? (void)0 : gt_assert_fail(#e, __FILE__, __LINE__))
_Noreturn void gt_assert_fail(const char *expr, const char *file, int line);

#define GT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors ----
 * A fallible function returns 0 or a negative code: -errno where a POSIX code
 * fits, else one of these. gt_errcode_http() maps any code to its HTTP status. */
enum gt_errcode {
    GT_EBADREQ = -1000, /* 400 BadRequest: malformed request (bad JSON, bad query) */
    GT_EUNAUTH,         /* 401 Unauthorized: no or unknown token */
    GT_EFORBIDDEN,      /* 403 Forbidden */
    GT_ENOTFOUND,       /* 404 NotFound */
    GT_EEXISTS,         /* 409 AlreadyExists */
    GT_ECONFLICT,       /* 409 Conflict: stale resourceVersion */
    GT_EGONE,           /* 410 Gone: watch start point compacted */
    GT_ETOOLARGE,       /* 413 RequestEntityTooLarge */
    GT_EINVAL,          /* 422 Invalid: well-formed but fails validation */
    GT_ESTORE,          /* 503 ServiceUnavailable: store write failed, nothing written */
    GT_EFSYNC,          /* 503 ServiceUnavailable: fsync failed; store is unusable */
    GT_EMETHOD,         /* 405 MethodNotAllowed */
    GT_EINTERNAL,       /* 500 InternalError */
    GT_EUSAGE,          /* 400 BadRequest: a bad command line (a program's usage error) */
    GT_ENOTLEADER, /* 503 ServiceUnavailable: a guarded write from a replica no longer leader */
    GT_ETIMEOUT,   /* 504 Timeout: a read waited too long for the revision it must see */
    GT_ECODE_END
};

/* Context for an error: set once where the failure starts, added to on the way
 * up with gt_err_prefix. Caller-owned; fixed size, truncates. */
struct gt_err {
    int code;
    char msg[512];
};

/* Set err (if non-NULL and not already set) to code and a formatted message.
 * Returns code, so `return gt_err_set(err, GT_EINVAL, "...")` reads well. */
int gt_err_set(struct gt_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prepend "prefix: " to err's message (no-op if err is NULL or unset). */
void gt_err_prefix(struct gt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reset err to no error. */
void gt_err_clear(struct gt_err *err);
/* HTTP status for a code (500 for unknown codes). */
int gt_errcode_http(int code);
/* Kubernetes Status reason for a code ("Invalid", "NotFound", ...). */
const char *gt_errcode_reason(int code);
/* Short human message for a code (strerror for -errno codes). */
const char *gt_errcode_str(int code);

/* ---- logging: logfmt on stderr ----
 * ts=2026-11-29T20:50:44.123Z level=info msg="..." then kv, which is a
 * printf format for "key=value key=value" pairs (may be NULL). Values with
 * spaces should be quoted by the caller. */
enum gt_log_level { GT_LOG_DEBUG, GT_LOG_INFO, GT_LOG_WARN, GT_LOG_ERROR };
void gt_log(enum gt_log_level level, const char *msg, const char *kv, ...)
    __attribute__((format(printf, 3, 4)));
/* Only messages at or above level are printed (default info). */
void gt_log_set_level(enum gt_log_level level);
#define gt_log_debug(msg, ...) gt_log(GT_LOG_DEBUG, msg, __VA_ARGS__)
#define gt_log_info(msg, ...) gt_log(GT_LOG_INFO, msg, __VA_ARGS__)
#define gt_log_warn(msg, ...) gt_log(GT_LOG_WARN, msg, __VA_ARGS__)
#define gt_log_error(msg, ...) gt_log(GT_LOG_ERROR, msg, __VA_ARGS__)

/* ---- time ---- */
/* Wall-clock milliseconds since the Unix epoch. */
int64_t gt_now_ms(void);
/* Monotonic milliseconds (CLOCK_MONOTONIC). */
int64_t gt_mono_ms(void);
/* Format ms since epoch as RFC 3339 UTC with seconds ("2026-11-29T20:50:44Z")
 * into buf (at least 32 bytes). Returns buf. */
char *gt_time_format(int64_t ms, char *buf, size_t len);
/* Parse RFC 3339 UTC ("...Z") into ms since epoch. 0 or GT_EINVAL. */
int gt_time_parse(const char *s, int64_t *ms);
/* Monotonic nanoseconds (CLOCK_MONOTONIC): durations and deadlines. */
int64_t gt_now_ns(void);

/* ---- random UUIDs (uuid.c) ---- */
/* Random bytes kept for gt_uuid4: the last `left` of them are unused.
 * Zero-initialize; the first call fills it. */
struct gt_uuid_pool {
    unsigned char bytes[512];
    size_t left;
};
/* A fresh random UUID v4 ("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx") into buf
 * (>= 37 bytes), from p; one getrandom per 32 UUIDs. */
void gt_uuid4(struct gt_uuid_pool *p, char *buf, size_t len);

/* ---- secrets (secret.c) ---- */
/* Is guess (borrowed) the secret (borrowed)? Compared in time that depends
 * only on the two lengths, never on where they first differ. */
bool gt_secret_equal(const char *guess, const char *secret);

/* ---- checked int64 arithmetic: 0 or -ERANGE, *out untouched on overflow ---- */
int gt_add_i64(int64_t a, int64_t b, int64_t *out);
int gt_sub_i64(int64_t a, int64_t b, int64_t *out);
int gt_mul_i64(int64_t a, int64_t b, int64_t *out);

/* ---- growable byte buffer; data is always NUL-terminated ---- */
struct gt_buf {
    char *data;
    size_t len;
    size_t cap;
};
void gt_buf_init(struct gt_buf *b);
void gt_buf_fini(struct gt_buf *b);
void gt_buf_reset(struct gt_buf *b);
void gt_buf_append(struct gt_buf *b, const void *data, size_t len);
void gt_buf_puts(struct gt_buf *b, const char *s);
void gt_buf_printf(struct gt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append len bytes of data in base64 (RFC 4648): the standard alphabet
 * with '=' padding, or (url) the URL-safe one without padding, as JWTs
 * use it. */
void gt_buf_base64(struct gt_buf *b, const void *data, size_t len, bool url);
/* Take ownership of the data (caller frees); b is left empty. */
char *gt_buf_take(struct gt_buf *b);

/* The Prometheus text format (0.0.4), for the /metrics of gantryd and
 * gantlet (prom.c): a family's "# HELP" and "# TYPE" lines; a label
 * name="value" (preceded by ',' unless first) with the value's backslash,
 * quote and newline escaped (value NULL: empty). */
void gt_prom_family(struct gt_buf *b, const char *name, const char *type, const char *help);
void gt_prom_label(struct gt_buf *b, const char *name, const char *value, bool first);
/* One sample line: name{labels} value, labels a prepared "a=\"x\",b=\"y\""
 * list; integral values are written as integers, others with %.15g. */
void gt_prom_sample(struct gt_buf *b, const char *name, const char *labels, double value);

/* ---- growable arrays ----
 * The one growth rule for arrays that grow by appending: once need elements
 * no longer fit, the capacity becomes first_cap (the first allocation; size
 * it to what the array usually holds) and doubles from there until need
 * fits. Sizes are overflow-checked: a capacity or byte count past SIZE_MAX
 * aborts, as running out of memory does (gt_xrealloc).
 *
 * A vector is a struct with the fields `T *v; size_t n; size_t cap;`:
 * `struct names GT_VEC(char *);` declares one (or `struct GT_VEC(T) x;` an
 * unnamed one); zero-initialised it is empty. GT_VEC_PUSH appends one
 * element; GT_VEC_FREE frees the array, not what its elements own. An array
 * kept in fields of its own (a pointer, a count and a capacity, as the
 * scheduler's model keeps its nodes) grows with GT_VEC_RESERVE. */

/* Grow arr (array of *cap elements of elem_size bytes, may be NULL with *cap
 * 0) to hold at least need elements by the rule above; returns the array
 * (moved, as by realloc) and updates *cap. arr unchanged when need fits. */
void *gt_vec_grow(void *arr, size_t *cap, size_t need, size_t first_cap, size_t elem_size);

/* Make room for need elements in arr (a T * lvalue) of cap (a size_t lvalue)
 * elements. Inline test first: no call while there is room. */
#define GT_VEC_RESERVE(arr, cap, need, first_cap)                                                  \
    ((need) > (cap)                                                                                \
         ? (void)((arr) = gt_vec_grow((arr), &(cap), (need), (first_cap), sizeof(*(arr))))         \
         : (void)0)

/* The body of a vector of T: `struct name GT_VEC(T);`. */
#define GT_VEC(T)                                                                                  \
    {                                                                                              \
        T *v;                                                                                      \
        size_t n;                                                                                  \
        size_t cap;                                                                                \
    }

/* Append one element to vec (a pointer to a vector) and return a pointer to
 * it (uninitialised; valid until the next push). */
#define GT_VEC_PUSH(vec, first_cap)                                                                \
    (GT_VEC_RESERVE((vec)->v, (vec)->cap, (vec)->n + 1, (first_cap)), &(vec)->v[(vec)->n++])

/* Free vec's array (not its elements' own memory) and leave it empty. */
#define GT_VEC_FREE(vec) (free((vec)->v), (vec)->v = NULL, (vec)->n = (vec)->cap = 0)

/* ---- whole-file reads, bounded ----
 * Every file gantry reads whole (token files, traces, manifests, a task's
 * state files) has a maximum size; going over it is an error, never an
 * unbounded allocation. */

/* Read fd (borrowed, left open, read from where it stands) to end of file,
 * at most max_bytes (below SIZE_MAX / 2), into a new NUL-terminated buffer:
 * *out (caller frees; "" for an empty file) and *len (without the NUL).
 * name is the input's name in messages. 0; -errno with "cannot read NAME:
 * <strerror>"; GT_ETOOLARGE with "NAME is over N bytes" (or "N MiB") past
 * max_bytes. On error *out is NULL and *len 0. EINTR is retried. */
int gt_file_read_fd(int fd, const char *name, size_t max_bytes, char **out, size_t *len,
                    struct gt_err *err);

/* Open path (O_CLOEXEC) and read it whole as gt_file_read_fd does; -errno
 * with "cannot open PATH: <strerror>" when it cannot be opened. */
int gt_file_read(const char *path, size_t max_bytes, char **out, size_t *len, struct gt_err *err);

#include "common/config.h"
#include "common/execframe.h"
#include "common/jsonutil.h"
#include "common/quantity.h"
#include "common/resource.h"

#endif
