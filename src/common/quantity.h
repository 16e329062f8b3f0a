/*
 * Kubernetes resource quantities ("500m", "16Gi", "1.5", "2e3") parsed into
 * int64 canonical units, as k8s.io/apimachinery/pkg/api/resource defines the
 * syntax: <signed-number><suffix>, suffix one of the binary (Ki Mi Gi Ti Pi
 * Ei), decimal (n u m "" k M G T P E) or decimal-exponent (e3, E-2) forms.
 */
#ifndef GT_QUANTITY_H
#define GT_QUANTITY_H

#include <stdint.h>

struct gt_err;

/* Canonical unit a quantity is scaled into. */
enum gt_qty_unit {
    GT_QTY_MILLI, /* value * 1000, must be integral after scaling: cpu -> milli-CPU */
    GT_QTY_UNIT,  /* value as is, must be integral: bytes, whole GPUs, gpu-milli */
};

/* Parse s into *out scaled to unit. Rejects: empty, garbage (also trailing),
 * negatives, fractions left after scaling, overflow of int64 after scaling.
 * Returns 0, or GT_EINVAL with err naming the reason (not the field: the
 * caller prefixes the field path). */
int gt_quantity_parse(const char *s, enum gt_qty_unit unit, int64_t *out, struct gt_err *err);

/* Format a canonical value back into its shortest exact quantity string:
 * GT_QTY_MILLI 1500 -> "1500m", 2000 -> "2"; GT_QTY_UNIT 17179869184 with
 * binary=1 -> "16Gi", otherwise plain decimal. buf must hold 32 bytes. */
char *gt_quantity_format(int64_t v, enum gt_qty_unit unit, int binary, char *buf, size_t len);

#endif
