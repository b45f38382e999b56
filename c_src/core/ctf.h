/* CTF 1.8 layout of beamtrace's traces: the packet header and context every
 * sub-buffer starts with, and the metadata text describing them.
 *
 * A trace directory holds `metadata` (TSDL text) and one data stream file
 * per recording thread, `channel0_<N>`. Every packet is
 *
 *   trace.packet.header  magic u32 | uuid u8[16] | stream_id u32 | stream_instance_id u64
 *   stream.packet.context timestamp_begin u64 | timestamp_end u64 |
 *                         content_size u64 (bits) | packet_size u64 (bits) |
 *                         packet_seq_num u64 | events_discarded u64 | cpu_id u32
 *   events               id u16 | timestamp u64 | fields (see event.h)
 *
 * all little-endian and byte-packed (align = 8 bits), as LTTng-UST lays out
 * its x86 traces. packet_size equals content_size: packets are written
 * without padding. events_discarded is the stream's free-running count of
 * dropped events when the packet closed, so babeltrace2 reports the losses.
 * Pure C; the functions are reentrant.
 */
#ifndef BMT_CTF_H
#define BMT_CTF_H

#include <stddef.h>
#include <stdint.h>

#define BMT_CTF_MAGIC 0xC1FC1FC1u
#define BMT_CTF_UUID_BYTES 16

/* Byte offsets inside a packet. */
enum {
    BMT_PKT_MAGIC = 0,
    BMT_PKT_UUID = 4,
    BMT_PKT_STREAM_ID = 20,
    BMT_PKT_STREAM_INSTANCE_ID = 24,
    BMT_PKT_TS_BEGIN = 32,
    BMT_PKT_TS_END = 40,
    BMT_PKT_CONTENT_SIZE = 48,
    BMT_PKT_PACKET_SIZE = 56,
    BMT_PKT_SEQ_NUM = 64,
    BMT_PKT_EVENTS_DISCARDED = 72,
    BMT_PKT_CPU_ID = 80,
    BMT_PKT_HEADER_BYTES = 84, /* first event starts here */
};

/* One more entry of the metadata's env block: `key = "text";` or
 * `key = value;`. Keys are TSDL identifiers (letters, digits, '_'); texts
 * are escaped when written. */
#define BMT_CTF_ENV_EXTRA_MAX 24
struct bmt_ctf_env_extra {
    char key[72];
    char text[256];           /* the value when is_text */
    int is_text;
    int64_t value;            /* the value otherwise */
};

/* What the metadata says about the trace as a whole. */
struct bmt_ctf_trace_info {
    uint8_t uuid[BMT_CTF_UUID_BYTES];
    char hostname[256];
    int64_t clock_offset_s;   /* CLOCK_REALTIME - CLOCK_MONOTONIC, whole seconds */
    int64_t clock_offset_ns;  /* and the remaining nanoseconds, 0..999999999 */
    int64_t vpid;             /* OS pid of the traced VM */
    char procname[32];        /* its process name, e.g. "beam.smp" */
    char node[256];           /* the Erlang node name, or empty */
    /* More env entries: a flight capture's trigger; a cluster controller's
     * clock estimate when a streamed trace is aligned to its clock at start
     * (no one rewrites the relayd's copy, as beamtrace_clock does a
     * copied-back trace). */
    unsigned env_extra_count; /* entries of env_extra in use */
    struct bmt_ctf_env_extra env_extra[BMT_CTF_ENV_EXTRA_MAX];
    /* The VM's schedulers (0: unknown, and left out of the metadata): at
     * most this many processes run at once on normal schedulers, and at
     * most the dirty counts on dirty ones (the command caps what it shows
     * running by them). */
    uint32_t schedulers_count, dirty_cpu_schedulers_count, dirty_io_schedulers_count;
    /* Which kind of VM thread wrote each stream (0: not said, and left out
     * of the metadata): streams below first_dirty_cpu_stream are normal
     * schedulers', then dirty CPU schedulers' up to first_dirty_io_stream,
     * dirty I/O schedulers' up to first_other_stream, and other threads'
     * after. The command counts processes running on dirty schedulers
     * apart from those on normal ones. */
    uint32_t first_dirty_cpu_stream, first_dirty_io_stream, first_other_stream;
};

/* Adds `key = "text"` (is_text) or `key = value` to info's env block.
 * Returns 0, or -ENOSPC when the block is full or the key or text too long,
 * -EINVAL for a key that is not an identifier. */
int bmt_ctf_env_add_text(struct bmt_ctf_trace_info *info, const char *key, const char *text);
int bmt_ctf_env_add_int(struct bmt_ctf_trace_info *info, const char *key, int64_t value);

/* Writes the packet header and the fixed part of the context for a packet
 * of stream `stream_instance` opening at `ts_begin_ns`. `pkt` must hold at
 * least BMT_PKT_HEADER_BYTES. */
void bmt_ctf_packet_open(uint8_t *pkt, const uint8_t uuid[BMT_CTF_UUID_BYTES],
                         uint64_t stream_instance, uint64_t ts_begin_ns);

/* Completes the context of a packet whose events end at `content_bytes`
 * (header included): end time, sizes, sequence number, discard total. */
void bmt_ctf_packet_close(uint8_t *pkt, uint64_t ts_end_ns, size_t content_bytes,
                          uint64_t seq_num, uint64_t events_discarded);

/* Formats the TSDL metadata for `info` and the whole catalogue into `buf`
 * (`size` bytes). Returns the length written (excluding NUL), or -ENOSPC
 * when `buf` is too small. */
long bmt_ctf_metadata(const struct bmt_ctf_trace_info *info, char *buf, size_t size);

/* Formats a uuid as the 36-character canonical text into `out` (37 bytes). */
void bmt_ctf_uuid_text(const uint8_t uuid[BMT_CTF_UUID_BYTES], char out[37]);

#endif
