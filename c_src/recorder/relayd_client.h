/* Streaming a recording session to lttng-relayd: the connection, its
 * handshake, and the session's streams on the relayd, as LTTng's consumer
 * daemon drives them, without lttng-sessiond (wire format in
 * relayd_proto.h).
 *
 * What the relayd makes of it: the layout `lttng create --set-url` gives a
 * per-process UST session,
 *   <relayd output>/<hostname>/<session>[-<datetime>]/ust/pid/<procname>-<pid>-<datetime>/
 *       metadata, channel0_<N> (one per recording thread), index/channel0_<N>.idx
 * the session directory's datetime being the recording's start (one per
 * recording, whatever the reconnections), the per-process one the
 * connection's (a reconnection opens a new directory, which readers merge:
 * same trace UUID, packet numbers and loss counts continuing).
 *
 * Workload: one client per session. Packets (4 KiB to a few MiB, up to
 * thousands a second) arrive from the session's consumer thread, which
 * drains the rings; a handful of streams carry nearly all of them.
 *
 * Never blocks: the sockets are non-blocking and every packet is copied
 * into a bounded send queue, or, when the queue is full or the relayd
 * unreachable, counted as lost for the relayd's copy (its events go into
 * the next packet's events_discarded, and into the figures). A packet
 * counts as delivered once a DATA_PENDING reply says the relayd wrote it
 * and its index (asked every CONFIRM_INTERVAL); a connection that breaks
 * takes whatever was not confirmed with it, counted as lost; what of it
 * had been sent is also counted as `unconfirmed`: the relayd may have
 * written it (a relayd killed just after writing a packet, or one that
 * resumes after the finish gave up on it, keeps packets it never
 * confirmed), so its copy holds between `events` and `events +
 * unconfirmed` events.
 *
 * Live sessions announce every stream (one per ring) with an empty packet
 * when a connection opens, where others add a stream with its first
 * packet: live viewers must know every stream before any shows them data.
 *
 * Reconnection: after a failure the client reconnects with backoff (0.5 s
 * doubling to 5 s), forever until finished, and resumes; streams are added
 * again as their next packet comes. A relayd too old for protocol 2.11 is a
 * permanent failure.
 *
 * Concurrency contract: one thread at a time drives the client (everything
 * but bmt_relayd_stats_get): the starter (bmt_relayd_open), then the
 * session's consumer thread, then whoever finishes the session after the
 * consumer stopped. bmt_relayd_stats_get may run on any thread (under a
 * mutex the driver takes briefly once per pump).
 */
#ifndef BMT_RELAYD_CLIENT_H
#define BMT_RELAYD_CLIENT_H

#include "relayd_proto.h"
#include "core/ctf.h"

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum bmt_relayd_state {
    BMT_RELAYD_CONNECTING = 0, /* connecting, or the handshake is under way */
    BMT_RELAYD_STREAMING,      /* the session is open on the relayd */
    BMT_RELAYD_DISCONNECTED,   /* lost; waiting to reconnect */
    BMT_RELAYD_CLOSED,         /* finished: every stream closed */
    BMT_RELAYD_FAILED,         /* finished without the relayd, or it can never work */
};

struct bmt_relayd_config {
    struct bmt_relayd_url url;
    struct sockaddr_storage control_addr, data_addr; /* bmt_relayd_resolve's */
    socklen_t control_addr_len, data_addr_len;
    char session_name[BMT_RELAYD_NAME_MAX];
    int name_is_final;            /* 1: the directory is the name; 0: -<datetime> appended */
    char hostname[BMT_RELAYD_HOST_NAME_MAX];
    char procname[32];            /* for the per-process directory */
    int64_t vpid;
    uint64_t start_time_s;        /* the recording's start, seconds since the epoch */
    uint64_t start_ns;            /* and in the trace clock (CLOCK_MONOTONIC) */
    uint32_t live_timer_us;       /* 0: not live */
    const char *metadata;         /* TSDL text, copied */
    size_t metadata_bytes;
    uint8_t uuid[BMT_CTF_UUID_BYTES]; /* the trace's, for the packets the client writes */
    unsigned stream_count;        /* rings: channel0_0 .. channel0_<count-1> */
    size_t queue_bytes;           /* packet bytes held while the network lags */
};

/* Figures of the relayd's copy, as of the last pump. */
struct bmt_relayd_stats {
    /* The numbers first: a pump copies them each time, the texts below
     * only when they changed. */
    enum bmt_relayd_state state;
    uint64_t events;          /* confirmed written by the relayd */
    uint64_t lost;            /* offered to the client and not confirmed delivered */
    uint64_t unconfirmed;     /* part of lost: sent, but the connection ended before
                                 the relayd confirmed them: its copy may hold them */
    uint64_t bytes;           /* packet bytes confirmed */
    uint64_t queued_bytes;    /* waiting in the send queue now */
    uint32_t connections;     /* sessions opened on a relayd (1 + reconnections) */
    uint32_t disconnections;  /* connections lost */
    int error;                /* errno of the last failure (kept after a
                                 reconnection), 0 if none */
    char url[1024];           /* the URL the session was given */
    char error_text[320];     /* the last failure, one line */
    char path[BMT_RELAYD_PATH_MAX]; /* the current connection's trace directory,
                                       relative to the relayd's output */
};

struct bmt_relayd;

/* Resolves the URL's host (blocking: getaddrinfo; IPv4 for net://, IPv6
 * for net6:// and bracketed addresses) into cfg's addresses. Returns 0 or a
 * negative errno with a one-line reason in `why`. */
int bmt_relayd_resolve(struct bmt_relayd_config *cfg, char *why, size_t why_size);

/* A client for `cfg` (its metadata copied), not connected. NULL when out of
 * memory. */
struct bmt_relayd *bmt_relayd_new(const struct bmt_relayd_config *cfg);

/* Connects and opens the session on the relayd, waiting at most
 * `timeout_ns` (blocking: for the start of a session, before its consumer
 * runs). Returns 0 once the session is open; else a negative errno
 * (-ECONNREFUSED, -ETIMEDOUT, -EPROTONOSUPPORT for a relayd too old, -EPROTO
 * for a refusal or a reply that makes no sense) with a one-line reason,
 * naming the URL and what to do, in `why`. */
int bmt_relayd_open(struct bmt_relayd *r, uint64_t timeout_ns, char *why, size_t why_size);

/* ---- the consumer's side ---- */

/* Offers packet `pkt` (`bytes` long, `events` events) of stream `stream`:
 * copies it into the send queue, numbered and with its loss count raised
 * for the relayd's copy, or counts it lost. The caller's packet is not
 * touched. */
void bmt_relayd_packet(struct bmt_relayd *r, unsigned stream, const uint8_t *pkt, size_t bytes,
                       uint32_t events);

/* Counts `events` of stream `stream` lost before reaching the client (a
 * cap left them unwritten): the relayd's copy says so in its next packet. */
void bmt_relayd_lose(struct bmt_relayd *r, unsigned stream, uint64_t events);

/* Stream `stream` has no event up to `idle_until_ns` (trace clock) and
 * holds nothing unsent: in a live session, tell live viewers so (a beacon,
 * at most once per live timer period), so they move on past it. */
void bmt_relayd_idle(struct bmt_relayd *r, unsigned stream, uint64_t idle_until_ns,
                     uint64_t now_ns);

/* The descriptors to poll and for what (at most 2 written to `fds`);
 * returns how many. */
int bmt_relayd_pollfds(const struct bmt_relayd *r, struct pollfd *fds);

/* Moves everything along without blocking: connects, sends, reads
 * replies, confirms, reconnects. `now_ns` is CLOCK_MONOTONIC. */
void bmt_relayd_pump(struct bmt_relayd *r, uint64_t now_ns);

/* Ends the relayd's copy: each stream's last packet says its final loss
 * count (`ring_discarded[i]`, the ring's own drops, or 0 when NULL, plus
 * what the client knows of), everything is delivered and confirmed, the streams and the
 * trace chunk closed, the connection closed; waiting at most until
 * `deadline_ns` (CLOCK_MONOTONIC), reconnecting meanwhile if need be.
 * What could not be confirmed by then counts as lost. `ts_ns` stamps the
 * closing packets. Returns 0, or -ETIMEDOUT when the deadline cut it short. */
int bmt_relayd_finish(struct bmt_relayd *r, const uint64_t *ring_discarded, unsigned count,
                      uint64_t ts_ns, uint64_t deadline_ns);

/* The figures as of the last pump (any thread). */
void bmt_relayd_stats_get(struct bmt_relayd *r, struct bmt_relayd_stats *st);

/* Closes whatever is open and frees. */
void bmt_relayd_free(struct bmt_relayd *r);

/* "streaming", "connecting", ... as info/1 says it. */
const char *bmt_relayd_state_name(enum bmt_relayd_state state);

#endif
