/* Test helper: writes a trace directory through the real rings and trace
 * directory writer, so generated traces are exactly what the recorder
 * produces. Used by the CLI corpus and the analyses' trace generators.
 * Single-threaded: one generator per thread.
 */
#ifndef BMT_TEST_TRACE_GEN_H
#define BMT_TEST_TRACE_GEN_H

#include "core/event.h"
#include "core/ring.h"
#include "core/trace_dir.h"

#define BMT_TEST_GEN_STREAMS 8

struct bmt_test_gen {
    char path[4096];
    struct bmt_trace_dir dir;
    unsigned stream_count;
    struct bmt_ring rings[BMT_TEST_GEN_STREAMS];
    uint8_t *mem[BMT_TEST_GEN_STREAMS];
    uint32_t *packet_events[BMT_TEST_GEN_STREAMS];
    uint32_t *packet_bytes[BMT_TEST_GEN_STREAMS];
    unsigned drain_every;      /* events per stream between drains; 1 = never drops */
    uint64_t since_drain[BMT_TEST_GEN_STREAMS];
    uint64_t last_ts_ns[BMT_TEST_GEN_STREAMS];
};

/* Creates the trace at `path` for `info` with `streams` rings (at most
 * BMT_TEST_GEN_STREAMS) of `subbuf_count` packets of `subbuf_bytes`.
 * Returns 0 or a negative errno (-EINVAL for bad sizes, -ENOMEM). */
int bmt_test_gen_open(struct bmt_test_gen *g, const char *path,
                      const struct bmt_ctf_trace_info *info, unsigned streams,
                      size_t subbuf_bytes, uint32_t subbuf_count, enum bmt_ring_mode mode,
                      unsigned drain_every);

/* Writes `ev` into stream `s`, draining every drain_every events. Returns 1
 * when recorded, 0 when the ring dropped it, or a negative errno when a
 * packet could not be written. */
int bmt_test_gen_emit(struct bmt_test_gen *g, unsigned s, const struct bmt_event *ev);

/* Publishes every ring's partial packet and drop count (two flushes: the
 * second publishes the count when the ring was full at the first), writes
 * everything, closes and frees. Returns 0 or a negative errno. */
int bmt_test_gen_close(struct bmt_test_gen *g);

#endif
