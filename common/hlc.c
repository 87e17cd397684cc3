/*
 * hlc: the clock is one 56-bit counter (milliseconds and the count within
 * one) kept shifted past the tag; a reading is max(now, last + 1).
 */
#include "hlc.h"

#include <string.h>

#include "hrw.h"
#include "util.h"

#define SHIFT (HLC_TAG_BITS + HLC_CTR_BITS)

static uint64_t last;            /* the last reading, without the tag */
static uint64_t tag;

void hlc_init(const char *node_id)
{
    tag = hrw_hash(node_id, strlen(node_id)) & ((1u << HLC_TAG_BITS) - 1);
}

uint64_t hlc_at_ms(uint64_t ms)
{
    return ms << SHIFT;
}

uint64_t hlc_ms(uint64_t version)
{
    return version >> SHIFT;
}

/* Raise last to at least v (a reading without the tag). */
static void raise_to(uint64_t v)
{
    uint64_t cur = __atomic_load_n(&last, __ATOMIC_RELAXED);
    while (cur < v && !__atomic_compare_exchange_n(&last, &cur, v, 0, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED))
        ;
}

void hlc_observe(uint64_t version)
{
    raise_to(version & ~(uint64_t)((1u << HLC_TAG_BITS) - 1));
}

uint64_t hlc_next(uint64_t floor)
{
    hlc_observe(floor);
    uint64_t now = hlc_at_ms(wall_ns() / 1000000u);
    uint64_t cur = __atomic_load_n(&last, __ATOMIC_RELAXED), next;
    do {
        next = cur + (1u << HLC_TAG_BITS);
        if (now > next)
            next = now;
    } while (!__atomic_compare_exchange_n(&last, &cur, next, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return next | tag;
}
