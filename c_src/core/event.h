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

/* The event header is LTTng-UST's "large" header: a 16-bit id and the low
 * 32 bits of the timestamp (6 bytes), or, when the id is 65535, a 32-bit id
 * and the whole 64-bit timestamp (14 bytes). A reader keeps the stream's
 * clock and takes the 32 bits as its new low half, carrying into the high
 * half when they wrapped (CTF 1.8, 8.1 "clocks"): exact while an event comes
 * less than 2^32 ns (4.3 s) after the stream's previous timestamp (the
 * packet's timestamp_begin for a packet's first event), so the writer uses
 * the extended form otherwise. Byte-packed (align 8), as LTTng-UST on x86.
 * Bytes per event then equal LTTng's for the same fields. */
#define BMT_EVENT_HEADER_BYTES 6
#define BMT_EVENT_HEADER_EXTENDED 0xffffu
/* Largest event header any event gets: the extended form. */
#define BMT_EVENT_HEADER_MAX_BYTES 14

/* Returns the number of bytes the fields of `ev` take in CTF (header not
 * included). */
size_t bmt_event_payload_bytes(const struct bmt_event *ev);

/* Writes the fields of `ev` in their CTF layout (strings with a trailing
 * NUL, integers little-endian) to `dst`, which must hold
 * bmt_event_payload_bytes(ev) bytes. Returns the bytes written. */
size_t bmt_event_encode_payload(const struct bmt_event *ev, uint8_t *dst);

/* Points the values of `ev` at the fields of tracepoint `tp` encoded at
 * `payload` in their CTF layout (what bmt_event_encode_payload writes:
 * strings NUL-terminated, integers little-endian): the inverse, for sinks
 * that take values from an event written in place. A tracepoint whose
 * first fields are another's (a link variant) can be read as that one.
 * Strings point into `payload`, which must stay put while they are used.
 * Returns the bytes read. */
size_t bmt_event_values_from_payload(struct bmt_event *ev, int tp, const uint8_t *payload);

/* The whole event, header included, for a stream whose previous timestamp
 * was `prev_ts_ns`: size (an upper bound: the header may be shorter), and
 * the encoder, which returns the bytes written. */
size_t bmt_event_size(const struct bmt_event *ev);
size_t bmt_event_encode(const struct bmt_event *ev, uint8_t *dst, uint64_t prev_ts_ns);

/* Little-endian stores and loads used by every CTF encoder and decoder: one
 * unaligned move each on a little-endian host (the byte loops they replace
 * compiled to eight stores). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BMT_LE16(v) __builtin_bswap16(v)
#define BMT_LE32(v) __builtin_bswap32(v)
#define BMT_LE64(v) __builtin_bswap64(v)
#else
#define BMT_LE16(v) (v)
#define BMT_LE32(v) (v)
#define BMT_LE64(v) (v)
#endif
static inline void bmt_put_u16(uint8_t *p, uint16_t v)
{
    v = BMT_LE16(v);
    __builtin_memcpy(p, &v, sizeof v);
}
static inline void bmt_put_u32(uint8_t *p, uint32_t v)
{
    v = BMT_LE32(v);
    __builtin_memcpy(p, &v, sizeof v);
}
static inline void bmt_put_u64(uint8_t *p, uint64_t v)
{
    v = BMT_LE64(v);
    __builtin_memcpy(p, &v, sizeof v);
}

/* Writes the header of an event of tracepoint `id` stamped `ts_ns` at `dst`
 * (BMT_EVENT_HEADER_MAX_BYTES of room), in a stream whose previous
 * timestamp was `prev_ts_ns`. Returns the header's size in bytes. */
static inline size_t bmt_event_header_write(uint8_t *dst, unsigned id, uint64_t ts_ns,
                                            uint64_t prev_ts_ns)
{
    /* ts_ns below prev_ts_ns wraps the difference past UINT32_MAX. */
    if (__builtin_expect(ts_ns - prev_ts_ns <= UINT32_MAX && id < BMT_EVENT_HEADER_EXTENDED,
                         1)) {
        bmt_put_u16(dst, (uint16_t)id);
        bmt_put_u32(dst + 2, (uint32_t)ts_ns);
        return BMT_EVENT_HEADER_BYTES;
    }
    bmt_put_u16(dst, BMT_EVENT_HEADER_EXTENDED);
    bmt_put_u32(dst + 2, id);
    bmt_put_u64(dst + 6, ts_ns);
    return BMT_EVENT_HEADER_MAX_BYTES;
}

/* Reads the event header at `p` (`room` bytes) of a stream whose previous
 * timestamp was `prev_ts_ns`: sets *id and *ts_ns and returns the header's
 * size, or 0 when `room` is too short. The inverse of the writer above. */
static inline size_t bmt_event_header_read(const uint8_t *p, size_t room, unsigned *id,
                                           uint64_t *ts_ns, uint64_t prev_ts_ns)
{
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    if (room < BMT_EVENT_HEADER_BYTES)
        return 0;
    __builtin_memcpy(&v16, p, sizeof v16);
    __builtin_memcpy(&v32, p + 2, sizeof v32);
    v16 = BMT_LE16(v16);
    v32 = BMT_LE32(v32);
    if (v16 != BMT_EVENT_HEADER_EXTENDED) {
        uint64_t ts = (prev_ts_ns & ~(uint64_t)UINT32_MAX) | v32;
        if (v32 < (uint32_t)prev_ts_ns)
            ts += UINT64_C(1) << 32;
        *id = v16;
        *ts_ns = ts;
        return BMT_EVENT_HEADER_BYTES;
    }
    if (room < BMT_EVENT_HEADER_MAX_BYTES)
        return 0;
    __builtin_memcpy(&v64, p + 6, sizeof v64);
    *id = v32;
    *ts_ns = BMT_LE64(v64);
    return BMT_EVENT_HEADER_MAX_BYTES;
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
