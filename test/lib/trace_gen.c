/* Trace generator for tests (contract in trace_gen.h). */
#include "trace_gen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int bmt_test_gen_open(struct bmt_test_gen *g, const char *path,
                      const struct bmt_ctf_trace_info *info, unsigned streams,
                      size_t subbuf_bytes, uint32_t subbuf_count, enum bmt_ring_mode mode,
                      unsigned drain_every)
{
    memset(g, 0, sizeof *g);
    if (streams == 0 || streams > BMT_TEST_GEN_STREAMS || drain_every == 0)
        return -EINVAL;
    /* The writer takes absolute paths only. */
    char cwd[2048] = "";
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
        return -errno;
    snprintf(g->path, sizeof g->path, "%s%s%s", cwd, cwd[0] ? "/" : "", path);
    int rc = bmt_trace_dir_create(&g->dir, g->path, 0, info, 0, 0);
    if (rc < 0)
        return rc;
    g->stream_count = streams;
    g->drain_every = drain_every;
    for (unsigned s = 0; s < streams; s++) {
        g->mem[s] = malloc(subbuf_bytes * subbuf_count);
        g->packet_events[s] = calloc(subbuf_count, sizeof(uint32_t));
        g->packet_bytes[s] = calloc(subbuf_count, sizeof(uint32_t));
        if (!g->mem[s] || !g->packet_events[s] || !g->packet_bytes[s])
            return -ENOMEM;
        rc = bmt_ring_init(&g->rings[s], g->mem[s], g->packet_events[s], g->packet_bytes[s],
                           subbuf_bytes, subbuf_count, mode, s, info->uuid);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int drain(struct bmt_test_gen *g, unsigned s)
{
    const uint8_t *pkt;
    size_t bytes;
    uint32_t events;
    while ((pkt = bmt_ring_peek(&g->rings[s], &bytes, &events))) {
        int rc = bmt_trace_dir_write_packet(&g->dir, s, (uint8_t *)pkt, bytes, events);
        if (rc < 0)
            return rc;
        bmt_ring_release(&g->rings[s]);
    }
    return 0;
}

int bmt_test_gen_emit(struct bmt_test_gen *g, unsigned s, const struct bmt_event *ev)
{
    int recorded = 0;
    recorded = bmt_ring_put_event(&g->rings[s], ev);
    g->last_ts_ns[s] = ev->ts_ns;
    if (++g->since_drain[s] >= g->drain_every) {
        g->since_drain[s] = 0;
        int rc = drain(g, s);
        if (rc < 0)
            return rc;
    }
    return recorded;
}

int bmt_test_gen_close(struct bmt_test_gen *g)
{
    int rc = 0;
    for (unsigned s = 0; s < g->stream_count; s++) {
        uint64_t end = g->last_ts_ns[s] + 1;
        bmt_ring_flush(&g->rings[s], end);
        if (rc == 0)
            rc = drain(g, s);
        bmt_ring_flush(&g->rings[s], end + 1);
        if (rc == 0)
            rc = drain(g, s);
        free(g->mem[s]);
        free(g->packet_events[s]);
        free(g->packet_bytes[s]);
    }
    int close_rc = bmt_trace_dir_close(&g->dir);
    return rc < 0 ? rc : close_rc;
}
