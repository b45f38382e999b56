/* One event between decoding and the sinks: the tracepoint id, its
 * timestamp, and one value per catalogue field.
 *
 * The tracer fills a thread-owned struct bmt_event (strings point into that
 * thread's scratch buffer), then each sink consumes it: the recorder encodes
 * it into its ring with bmt_event_encode. Pure C; no locks, no allocation.
 */
#ifndef BMT_EVENT_H
#define BMT_EVENT_H

#include "catalogue.h"

#include <stddef.h>
#include <stdint.h>

struct bmt_value {
    const char *str;  /* string fields: bytes, not NUL-terminated here */
    uint32_t len;     /* string fields: length in bytes */
    uint64_t integer; /* integer fields */
};

struct bmt_event {
    uint16_t id;     /* enum bmt_tracepoint_id */
    uint64_t ts_ns;  /* CLOCK_MONOTONIC, nanoseconds */
    struct bmt_value values[BMT_MAX_FIELDS];
};

/* Size of the event header in the CTF stream: uint16 id + uint64 timestamp,
 * byte-packed (align = 8 bits, like LTTng-UST on x86). */
#define BMT_EVENT_HEADER_BYTES 10

/* Returns the number of bytes bmt_event_encode writes for `ev`. */
size_t bmt_event_size(const struct bmt_event *ev);

/* Writes `ev` in its CTF layout (header, then each field: strings with a
 * trailing NUL, integers little-endian) to `dst`, which must hold
 * bmt_event_size(ev) bytes. */
void bmt_event_encode(const struct bmt_event *ev, uint8_t *dst);

/* Little-endian stores and loads used by every CTF encoder and decoder. */
static inline void bmt_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void bmt_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void bmt_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t bmt_get_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t bmt_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static inline uint64_t bmt_get_u64(const uint8_t *p)
{
    return (uint64_t)bmt_get_u32(p) | ((uint64_t)bmt_get_u32(p + 4) << 32);
}

#endif
