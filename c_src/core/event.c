/* Encoder from struct bmt_event to the CTF event layout the metadata
 * (ctf_metadata.c) declares. Pure, reentrant. */
#include "event.h"

#include <string.h>

size_t bmt_event_payload_bytes(const struct bmt_event *ev)
{
    const struct bmt_tracepoint *tp = &bmt_catalogue[ev->id];
    size_t bytes = 0;
    for (unsigned i = 0; i < tp->field_count; i++) {
        switch (tp->fields[i].type) {
        case BMT_FIELD_STRING: bytes += ev->values[i].len + 1u; break;
        case BMT_FIELD_U32: bytes += 4; break;
        case BMT_FIELD_U64:
        case BMT_FIELD_S64: bytes += 8; break;
        }
    }
    return bytes;
}

size_t bmt_event_size(const struct bmt_event *ev)
{
    return BMT_EVENT_HEADER_MAX_BYTES + bmt_event_payload_bytes(ev);
}

size_t bmt_event_encode(const struct bmt_event *ev, uint8_t *dst, uint64_t prev_ts_ns)
{
    size_t header = bmt_event_header_write(dst, ev->id, ev->ts_ns, prev_ts_ns);
    return header + bmt_event_encode_payload(ev, dst + header);
}

size_t bmt_event_encode_payload(const struct bmt_event *ev, uint8_t *dst)
{
    const struct bmt_tracepoint *tp = &bmt_catalogue[ev->id];
    uint8_t *start = dst;
    for (unsigned i = 0; i < tp->field_count; i++) {
        const struct bmt_value *v = &ev->values[i];
        switch (tp->fields[i].type) {
        case BMT_FIELD_STRING:
            memcpy(dst, v->str, v->len);
            dst[v->len] = '\0';
            dst += v->len + 1u;
            break;
        case BMT_FIELD_U32:
            bmt_put_u32(dst, (uint32_t)v->integer);
            dst += 4;
            break;
        case BMT_FIELD_U64:
        case BMT_FIELD_S64:
            bmt_put_u64(dst, v->integer);
            dst += 8;
            break;
        }
    }
    return (size_t)(dst - start);
}

size_t bmt_event_values_from_payload(struct bmt_event *ev, int tp, const uint8_t *payload)
{
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    const uint8_t *p = payload;
    for (unsigned i = 0; i < t->field_count; i++) {
        struct bmt_value *v = &ev->values[i];
        switch (t->fields[i].type) {
        case BMT_FIELD_STRING:
            v->str = (const char *)p;
            v->len = (uint32_t)strlen((const char *)p);
            p += v->len + 1u;
            break;
        case BMT_FIELD_U32:
            v->integer = bmt_get_u32(p);
            p += 4;
            break;
        case BMT_FIELD_U64:
        case BMT_FIELD_S64:
            v->integer = bmt_get_u64(p);
            p += 8;
            break;
        }
    }
    return (size_t)(p - payload);
}
