/*
 * Fuzz target: HAProxy's `show stat` CSV as the serving gateway reads it
 * (its proxy and server names come from users' services). The text is
 * parsed twice, a poll apart, into one map: every replica read has
 * non-negative counters and finite rates.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_cb(const char *key, void *val, void *arg)
{
    (void)arg;
    const struct gt_gw_track *t = val;
    GT_ASSERT(strchr(key, '/') != NULL);
    GT_ASSERT(t->pub.stot >= 0 && t->pub.errors >= 0 && t->pub.hrsp_5xx >= 0);
    GT_ASSERT(isfinite(t->pub.rate_rps) && isfinite(t->pub.error_rate));
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = gt_xstrndup((const char *)data, size);
    struct gt_strmap stats;
    gt_strmap_init(&stats);
    gt_gateway_stats_parse(&stats, text, 1000);
    gt_gateway_stats_parse(&stats, text, 1250);
    gt_strmap_each(&stats, check_cb, NULL);
    gt_strmap_fini(&stats, free);
    free(text);
    return 0;
}
