/* lttng-relayd's network protocol, the producer side, as LTTng 2.11 to 2.15
 * speak it: byte layouts of the commands beamtrace sends and of the replies
 * it reads, and the `net://` URL. Encoders and decoders only: no sockets,
 * no state (relayd_client.c holds the connection).
 *
 * Facts (from lttng-tools: src/common/sessiond-comm/relayd.h,
 * src/common/relayd/relayd.c, src/bin/lttng-relayd/main.c, cmd-2-11.c):
 *  - Two TCP connections: control (default port 5342) and data (5343);
 *    viewers use a third (5344). Every integer on the wire is big-endian;
 *    structures are packed.
 *  - Control: a 24-byte header {circuit_id u64 (0), data_size u64, cmd u32,
 *    cmd_version u32 (0)} then data_size bytes. Every command but
 *    SEND_METADATA gets a reply, in order; most replies are {ret_code u32},
 *    LTTNG_OK (10) on success.
 *  - Data: a 32-byte header {circuit_id u64, relayd stream handle u64,
 *    net_seq_num u64 (per stream, from 0), data_size u32, padding_size u32}
 *    then data_size bytes; the relayd writes the padding itself, as zeros.
 *    No reply. Data and its index (SEND_INDEX on the control connection)
 *    may arrive in either order; the relayd writes the index entry when it
 *    has both.
 *  - VERSION {major u32, minor u32} is answered with the relayd's; both sides
 *    then use the lower minor. Protocol 2.11 introduced sessions keyed by a
 *    sessiond uuid and trace chunks (what the layouts here are); 2.15 adds
 *    a trace format to CREATE_SESSION for minor >= 15 only, so announcing
 *    2.13 keeps these layouts with any relayd from 2.11 on.
 *  - A live beacon is a SEND_INDEX whose packet_size is 0: timestamp_end is
 *    the time up to which the stream is known to be idle.
 *
 * Pure C, reentrant. Encoders write into a caller's buffer and return the
 * bytes written, or -ENOSPC / -EINVAL.
 */
#ifndef BMT_RELAYD_PROTO_H
#define BMT_RELAYD_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define BMT_RELAYD_MAJOR 2
#define BMT_RELAYD_MINOR 13     /* the protocol minor beamtrace announces */
#define BMT_RELAYD_MIN_MINOR 11 /* the oldest relayd minor it can talk to */

#define BMT_RELAYD_CONTROL_PORT 5342
#define BMT_RELAYD_DATA_PORT 5343
#define BMT_RELAYD_LIVE_PORT 5344

/* LTTng's enum lttng_error_code LTTNG_OK: what a relayd replies on success. */
#define BMT_RELAYD_OK 10

/* enum lttcomm_relayd_command: the ones beamtrace sends. */
enum bmt_relayd_cmd {
    BMT_RELAYD_ADD_STREAM = 1,
    BMT_RELAYD_CREATE_SESSION = 2,
    BMT_RELAYD_VERSION = 5,
    BMT_RELAYD_SEND_METADATA = 6,
    BMT_RELAYD_CLOSE_STREAM = 7,
    BMT_RELAYD_DATA_PENDING = 8,
    BMT_RELAYD_SEND_INDEX = 13,
    BMT_RELAYD_STREAMS_SENT = 16,
    BMT_RELAYD_CREATE_TRACE_CHUNK = 19,
    BMT_RELAYD_CLOSE_TRACE_CHUNK = 20,
};

/* Sizes on the wire, bytes. */
#define BMT_RELAYD_CMD_HEADER_BYTES 24
#define BMT_RELAYD_DATA_HEADER_BYTES 32
#define BMT_RELAYD_METADATA_HEADER_BYTES 12 /* {stream handle u64, padding u32} */
#define BMT_RELAYD_INDEX_BYTES 80           /* lttcomm_relayd_index, minor >= 8 */
#define BMT_RELAYD_CREATE_SESSION_BYTES 59  /* fixed part, the names follow */
#define BMT_RELAYD_ADD_STREAM_BYTES 32      /* fixed part, the names follow */
/* Replies. */
#define BMT_RELAYD_REPLY_GENERIC_BYTES 4    /* {ret_code u32} */
#define BMT_RELAYD_REPLY_VERSION_BYTES 8    /* {major u32, minor u32} */
#define BMT_RELAYD_REPLY_STREAM_BYTES 12    /* {handle u64, ret_code u32} */
#define BMT_RELAYD_REPLY_SESSION_BYTES 16   /* {id u64, ret u32, path_len u32}, path follows */
#define BMT_RELAYD_REPLY_CLOSE_CHUNK_BYTES 8 /* {ret u32, path_len u32}, path follows */

/* Longest names the relayd takes (LTTNG_NAME_MAX, LTTNG_HOST_NAME_MAX,
 * DEFAULT_STREAM_NAME_LEN, LTTNG_PATH_MAX), terminating NUL included. */
#define BMT_RELAYD_NAME_MAX 255
#define BMT_RELAYD_HOST_NAME_MAX 64
#define BMT_RELAYD_CHANNEL_NAME_MAX 264
#define BMT_RELAYD_PATH_MAX 4096

/* The fields of one packet's index (relayd.h's lttcomm_relayd_index): sizes
 * in bits as CTF has them, times in the trace clock's units. */
struct bmt_relayd_index {
    uint64_t relay_stream;        /* the relayd's stream handle */
    uint64_t net_seq_num;         /* the data header's sequence number */
    uint64_t packet_size_bits;    /* 0 makes a live beacon */
    uint64_t content_size_bits;
    uint64_t timestamp_begin;
    uint64_t timestamp_end;
    uint64_t events_discarded;
    uint64_t stream_class_id;     /* CTF stream class (stream_id in the packet header) */
    uint64_t stream_instance_id;
    uint64_t packet_seq_num;
};

/* What CREATE_SESSION announces (protocol 2.11 layout). */
struct bmt_relayd_session_args {
    const char *session_name;     /* path-safe: no '/', no leading '.' */
    const char *hostname;         /* likewise */
    const char *base_path;        /* "" for the relayd's <host>/<session>-<datetime> */
    uint32_t live_timer_us;       /* 0: not a live session */
    int name_contains_creation_time; /* 1: no -<datetime> is appended */
    uint8_t sessiond_uuid[16];    /* must not be all zeros */
    uint64_t session_id;          /* the sender's id of this session */
    uint64_t creation_time_s;     /* seconds since the epoch; names the directory */
};

/* ---- encoders: each writes one whole message ---- */

/* The control header of a command carrying `payload_bytes` after it. */
void bmt_relayd_put_cmd_header(uint8_t *out, enum bmt_relayd_cmd cmd, uint64_t payload_bytes);

/* VERSION: 32 bytes. */
size_t bmt_relayd_encode_version(uint8_t *out, uint32_t major, uint32_t minor);

/* CREATE_SESSION, 2.11 layout, no current trace chunk. Returns the length,
 * -EINVAL for an unsafe or empty name, -ENAMETOOLONG, or -ENOSPC when `cap`
 * is short. */
long bmt_relayd_encode_create_session(uint8_t *out, size_t cap,
                                      const struct bmt_relayd_session_args *a);

/* CREATE_TRACE_CHUNK {chunk_id, creation_timestamp_s, no name override}: 44
 * bytes. */
size_t bmt_relayd_encode_create_chunk(uint8_t *out, uint64_t chunk_id, uint64_t creation_time_s);

/* CLOSE_TRACE_CHUNK {chunk_id, close_timestamp_s, no command}: 45 bytes. */
size_t bmt_relayd_encode_close_chunk(uint8_t *out, uint64_t chunk_id, uint64_t close_time_s);

/* ADD_STREAM, 2.11 layout: channel `channel` ("metadata" makes the
 * metadata stream) in directory `path` under the chunk; no tracefile
 * rotation on the relayd. Returns the length, -EINVAL, -ENAMETOOLONG or
 * -ENOSPC. */
long bmt_relayd_encode_add_stream(uint8_t *out, size_t cap, const char *channel, const char *path,
                                  uint64_t chunk_id);

/* STREAMS_SENT (publishes the streams added so far to live viewers): 24
 * bytes. */
size_t bmt_relayd_encode_streams_sent(uint8_t *out);

/* SEND_METADATA header for `bytes` of metadata text of stream `handle`,
 * which the caller sends right after: 36 bytes. */
size_t bmt_relayd_encode_metadata_header(uint8_t *out, uint64_t handle, uint64_t bytes);

/* SEND_INDEX: 104 bytes. */
size_t bmt_relayd_encode_index(uint8_t *out, const struct bmt_relayd_index *ix);

/* CLOSE_STREAM {handle, last net_seq_num sent (all ones: none)}: 40 bytes. */
size_t bmt_relayd_encode_close_stream(uint8_t *out, uint64_t handle, uint64_t last_net_seq_num);

/* DATA_PENDING {handle, last net_seq_num sent}: 40 bytes. The reply's
 * ret_code is 0 when the relayd has written every packet up to that number
 * and its index, 1 while some are still on their way. */
size_t bmt_relayd_encode_data_pending(uint8_t *out, uint64_t handle, uint64_t last_net_seq_num);

/* The data connection's header of a packet: 32 bytes. */
void bmt_relayd_put_data_header(uint8_t *out, uint64_t handle, uint64_t net_seq_num,
                                uint32_t data_bytes, uint32_t padding_bytes);

/* ---- decoders ---- */

static inline uint32_t bmt_relayd_get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t bmt_relayd_get_be64(const uint8_t *p)
{
    return (uint64_t)bmt_relayd_get_be32(p) << 32 | bmt_relayd_get_be32(p + 4);
}

/* ---- the URL ---- */

/* net://HOST[:CONTROL_PORT[:DATA_PORT]][/BASE_PATH] or net6://..., HOST a
 * name, an IPv4 address, or an IPv6 address in brackets (as lttng's
 * --set-url takes them). */
struct bmt_relayd_url {
    char text[1024];              /* as given */
    char host[256];
    int ipv6;                     /* net6:// or a bracketed address */
    uint16_t control_port;
    uint16_t data_port;
    char base_path[BMT_RELAYD_PATH_MAX]; /* "" unless the URL has one */
};

/* Parses `text`. Returns 0, or -EINVAL with a one-line reason in `why`
 * (what is wrong and the expected form). */
int bmt_relayd_url_parse(const char *text, struct bmt_relayd_url *url, char *why, size_t why_size);

/* 1 when `name` may name a relayd session or host directory (the relayd's
 * is_name_path_safe: not empty, no '/', no leading '.'), and fits `max`
 * bytes with its NUL. */
int bmt_relayd_name_ok(const char *name, size_t max);

#endif
