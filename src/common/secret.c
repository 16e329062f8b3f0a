/* Comparing secrets (bearer tokens) without telling, by the time taken,
 * how much of a guess was right. */
#include <string.h>

#include "common/common.h"

bool gt_secret_equal(const char *guess, const char *secret)
{
    size_t lg = strlen(guess), ls = strlen(secret);
    unsigned char d = lg != ls;
    for (size_t i = 0; i < ls; i++) {
        d |= (unsigned char)((lg ? guess[i % lg] : 0) ^ secret[i]);
    }
    return d == 0;
}
