/*
 * Kubernetes resource quantities, parsed with exact decimal arithmetic.
 *
 * A quantity is read as significand * 10^e10 * 2^e2: the significand is the
 * digit string with leading and trailing zeros stripped (trailing zeros move
 * into e10), the fraction digits lower e10, a decimal or exponent suffix
 * adds to e10 and a binary suffix sets e2. The value is then reduced in
 * unsigned 128-bit arithmetic, cancelling powers of two and five, so no
 * double is ever involved and every overflow is detected before it happens.
 * The input length is bounded, which bounds every exponent.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"

/* Longer quantity strings are rejected outright (k8s quantities are short). */
#define MAX_QUANTITY_LEN 128
/* More significant digits than this cannot be held exactly in 128 bits. */
#define MAX_SIG_DIGITS 38

typedef unsigned __int128 u128;

struct suffix {
    const char *text;
    int e10;
    int e2;
};

/* Suffixes as k8s.io/apimachinery/pkg/api/resource/suffix.go lists them. */
static const struct suffix suffixes[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
};

static const char *const binary_suffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Parse the decimal-exponent suffix "e<int>"/"E<int>" at s into *e10. */
static int parse_exponent(const char *s, int *e10, struct gt_err *err)
{
    int sign = 1;
    int v = 0;
    s++; /* the 'e' or 'E' */
    if (*s == '+' || *s == '-') {
        sign = *s == '-' ? -1 : 1;
        s++;
    }
    if (!is_digit(*s)) {
        return gt_err_set(err, GT_EINVAL, "malformed exponent");
    }
    for (; is_digit(*s); s++) {
        v = v * 10 + (*s - '0');
        if (v > 10 * MAX_QUANTITY_LEN) {
            return gt_err_set(err, GT_EINVAL, "exponent out of range");
        }
    }
    if (*s != '\0') {
        return gt_err_set(err, GT_EINVAL, "trailing characters after exponent");
    }
    *e10 = sign * v;
    return 0;
}

static int parse_suffix(const char *s, int *e10, int *e2, struct gt_err *err)
{
    if ((s[0] == 'e' || s[0] == 'E') && s[1] != '\0' && s[1] != 'i') {
        *e2 = 0;
        return parse_exponent(s, e10, err);
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(suffixes); i++) {
        if (strcmp(s, suffixes[i].text) == 0) {
            *e10 = suffixes[i].e10;
            *e2 = suffixes[i].e2;
            return 0;
        }
    }
    return gt_err_set(err, GT_EINVAL, "unknown suffix \"%s\"", s);
}

/* Divide *v by p^k exactly; false if it does not divide. */
static bool divide_exact(u128 *v, unsigned p, int k)
{
    for (; k > 0; k--) {
        if (*v % p != 0) {
            return false;
        }
        *v /= p;
    }
    return true;
}

/* Multiply *v by p^k; false if the result passes INT64_MAX. */
static bool multiply_bounded(u128 *v, unsigned p, int k)
{
    for (; k > 0 && *v != 0; k--) {
        *v *= p;
        if (*v > (u128)INT64_MAX) {
            return false;
        }
    }
    return true;
}

int gt_quantity_parse(const char *s, enum gt_qty_unit unit, int64_t *out, struct gt_err *err)
{
    if (!s || *s == '\0') {
        return gt_err_set(err, GT_EINVAL, "empty quantity");
    }
    if (strnlen(s, MAX_QUANTITY_LEN + 1) > MAX_QUANTITY_LEN) {
        return gt_err_set(err, GT_EINVAL, "quantity too long");
    }
    const char *p = s;
    if (*p == '-') {
        return gt_err_set(err, GT_EINVAL, "must not be negative");
    }
    if (*p == '+') {
        p++;
    }
    u128 sig = 0;
    int n_sig = 0;
    int n_digits = 0;
    int e10 = 0;
    int pending_zeros = 0; /* zeros after the last nonzero digit, not yet in sig */
    bool in_fraction = false;
    for (;; p++) {
        if (*p == '.' && !in_fraction) {
            in_fraction = true;
            continue;
        }
        if (!is_digit(*p)) {
            break;
        }
        n_digits++;
        if (in_fraction) {
            e10--;
        }
        if (*p == '0') {
            if (n_sig > 0) {
                pending_zeros++;
                e10++;
            }
            continue;
        }
        /* A nonzero digit: the zeros held back are significant after all. */
        n_sig += pending_zeros + 1;
        if (n_sig > MAX_SIG_DIGITS) {
            return gt_err_set(err, GT_EINVAL, "too many significant digits");
        }
        for (; pending_zeros > 0; pending_zeros--) {
            sig *= 10;
            e10--;
        }
        sig = sig * 10 + (u128)(*p - '0');
    }
    if (n_digits == 0) {
        return gt_err_set(err, GT_EINVAL, "not a number");
    }
    int sfx_e10 = 0;
    int e2 = 0;
    int rc = parse_suffix(p, &sfx_e10, &e2, err);
    if (rc < 0) {
        return rc;
    }
    e10 += sfx_e10;
    if (unit == GT_QTY_MILLI) {
        e10 += 3;
    }
    if (sig == 0) {
        *out = 0;
        return 0;
    }
    if (e10 < 0) {
        /* value = sig * 2^e2 / (2^k * 5^k): cancel twos, then divide. */
        int k = -e10;
        int cancel = e2 < k ? e2 : k;
        e2 -= cancel;
        if (!divide_exact(&sig, 2, k - cancel) || !divide_exact(&sig, 5, k)) {
            return gt_err_set(err, GT_EINVAL, "fractional value after scaling");
        }
        e10 = 0;
    }
    if (sig > (u128)INT64_MAX || !multiply_bounded(&sig, 10, e10) ||
        !multiply_bounded(&sig, 2, e2)) {
        return gt_err_set(err, GT_EINVAL, "value too large");
    }
    *out = (int64_t)sig;
    return 0;
}

char *gt_quantity_format(int64_t v, enum gt_qty_unit unit, int binary, char *buf, size_t len)
{
    if (unit == GT_QTY_MILLI) {
        if (v % 1000 == 0) {
            snprintf(buf, len, "%" PRId64, v / 1000);
        } else {
            snprintf(buf, len, "%" PRId64 "m", v);
        }
        return buf;
    }
    if (binary && v != 0) {
        int shift = 0;
        while (shift < 60 && v % ((int64_t)1 << (shift + 10)) == 0) {
            shift += 10;
        }
        if (shift > 0) {
            snprintf(buf, len, "%" PRId64 "%s", v / ((int64_t)1 << shift),
                     binary_suffixes[shift / 10 - 1]);
            return buf;
        }
    }
    snprintf(buf, len, "%" PRId64, v);
    return buf;
}
