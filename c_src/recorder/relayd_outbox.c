/* What the relayd client has to send, by stream (contract in
 * relayd_outbox.h).
 *
 * Packets wait as records (what the data header and index need) plus their
 * bytes in the data queue, both FIFO. A record goes out on the data
 * connection once its stream has a relayd handle; its index goes on the
 * control connection after it. Records stay until a DATA_PENDING reply
 * confirms them.
 */
#define _GNU_SOURCE /* MSG_NOSIGNAL */
#include "relayd_outbox.h"
#include "core/ctf.h"
#include "core/event.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define MS (UINT64_C(1000000))
#define CONFIRM_INTERVAL_NS (100 * MS) /* how often DATA_PENDING confirms delivery */
#define MAX_RECORDS 8192    /* packets queued or waiting for confirmation */

/* One packet on its way. */
struct bmt_relayd_record {
    uint32_t stream;
    uint32_t events;
    uint32_t bytes;       /* in the data queue until sent */
    uint8_t index_sent;   /* its data and its index went out */
    uint64_t net_seq;
    uint64_t ts_begin, ts_end;
    uint64_t discarded;   /* its events_discarded */
    uint64_t packet_seq;
};

struct bmt_relayd_stream {
    /* This connection. */
    uint8_t added;        /* ADD_STREAM sent */
    uint8_t has_handle;
    uint8_t querying;     /* a DATA_PENDING is out */
    uint8_t has_confirmed;
    uint8_t data_sent;    /* a packet went out (beacons need one) */
    uint64_t handle;
    uint64_t next_net_seq;
    uint64_t confirmed_seq;  /* written by the relayd up to here */
    uint64_t indexed_seq;    /* data and index sent up to here (valid if unindexed < queued) */
    uint64_t last_beacon_ns;
    /* The whole recording. */
    uint8_t ever;         /* has a packet in the relayd's copy, or on its way */
    uint32_t in_flight;   /* records of this stream */
    uint32_t unindexed;   /* of which not yet sent with their index */
    uint64_t next_packet_seq;
    uint64_t upstream_lost;  /* lost before the client (caps) */
    uint64_t net_lost;       /* lost by the client */
    uint64_t stamped;        /* events_discarded of the last packet confirmed */
    uint64_t last_ts_end;    /* of the last packet queued */
    uint64_t last_ring_discarded; /* the ring's count in the last packet queued */
    uint64_t events;         /* confirmed */
};

static inline struct bmt_relayd_record *record_at(const struct bmt_relayd_outbox *o, uint64_t abs)
{
    return &o->rec[abs % MAX_RECORDS];
}

int bmt_relayd_outbox_init(struct bmt_relayd_outbox *o, unsigned stream_count, size_t queue_bytes,
                           uint64_t start_ns, const uint8_t uuid[16])
{
    memset(o, 0, sizeof *o);
    o->stream_count = stream_count;
    o->start_ns = start_ns;
    memcpy(o->uuid, uuid, sizeof o->uuid);
    o->rec = calloc(MAX_RECORDS, sizeof *o->rec);
    o->streams = calloc(stream_count ? stream_count : 1, sizeof *o->streams);
    if (!o->rec || !o->streams ||
        bmt_byteq_init(&o->data, queue_bytes < 64 * 1024 ? 64 * 1024 : queue_bytes) != 0)
        return -ENOMEM;
    return 0;
}

void bmt_relayd_outbox_free(struct bmt_relayd_outbox *o)
{
    bmt_byteq_free(&o->data);
    free(o->rec);
    free(o->streams);
    o->rec = NULL;
    o->streams = NULL;
}

/* ---- records ---- */

/* 1 when record `rec` was confirmed written by the relayd. */
static int confirmed(const struct bmt_relayd_outbox *o, const struct bmt_relayd_record *rec)
{
    const struct bmt_relayd_stream *st = &o->streams[rec->stream];
    return rec->index_sent && st->has_confirmed && rec->net_seq <= st->confirmed_seq;
}

/* Counts record `rec` as delivered. */
static void delivered(struct bmt_relayd_outbox *o, const struct bmt_relayd_record *rec)
{
    struct bmt_relayd_stream *st = &o->streams[rec->stream];
    st->events += rec->events;
    st->stamped = rec->discarded;
    o->events += rec->events;
    o->bytes += rec->bytes;
}

void bmt_relayd_outbox_pop_confirmed(struct bmt_relayd_outbox *o)
{
    while (o->rec_count > 0) {
        struct bmt_relayd_record *rec = record_at(o, o->rec_first);
        if (!confirmed(o, rec))
            break;
        delivered(o, rec);
        o->streams[rec->stream].in_flight--;
        o->rec_first++;
        o->rec_count--;
    }
}

void bmt_relayd_outbox_settle(struct bmt_relayd_outbox *o)
{
    for (uint64_t n = 0; n < o->rec_count; n++) {
        struct bmt_relayd_record *rec = record_at(o, o->rec_first + n);
        struct bmt_relayd_stream *st = &o->streams[rec->stream];
        if (confirmed(o, rec)) {
            delivered(o, rec);
        } else {
            st->net_lost += rec->events;
            o->lost += rec->events;
            if (o->rec_first + n < o->rec_data)
                o->unconfirmed += rec->events;
        }
        st->in_flight--;
    }
    o->rec_first += o->rec_count;
    o->rec_count = 0;
    o->rec_data = o->rec_index = o->rec_first;
    o->data_off = 0;
    bmt_byteq_clear(&o->data);
    for (unsigned i = 0; i < o->stream_count; i++) {
        struct bmt_relayd_stream *st = &o->streams[i];
        st->added = st->has_handle = st->querying = st->has_confirmed = st->data_sent = 0;
        st->next_net_seq = 0;
        st->unindexed = 0;
    }
}

/* ---- the relayd's streams ---- */

/* Adds the streams that have something to send and no relayd stream yet,
 * then publishes them to live viewers. */
static void add_streams(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c,
                        const char *trace_dir)
{
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + 1024];
    int added = 0;
    for (unsigned i = 0; i < o->stream_count; i++) {
        struct bmt_relayd_stream *st = &o->streams[i];
        if (st->added || st->in_flight == 0)
            continue;
        char channel[32];
        snprintf(channel, sizeof channel, "channel0_%u", i);
        long len = bmt_relayd_encode_add_stream(msg, sizeof msg, channel, trace_dir, 0);
        if (len < 0 || bmt_byteq_room(&c->out) < (size_t)len + 2 * BMT_RELAYD_CMD_HEADER_BYTES ||
            c->count + 2 > BMT_RELAYD_MAX_EXPECT)
            break;
        bmt_relayd_command(c, msg, (size_t)len, BMT_RELAYD_EXPECT_STREAM, i, 0);
        st->added = 1;
        added = 1;
    }
    if (added)
        bmt_relayd_command(c, msg, bmt_relayd_encode_streams_sent(msg), BMT_RELAYD_EXPECT_GENERIC,
                           0, 0);
}

/* Asks, once per interval, which streams' packets the relayd has written. */
static void confirm(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c, uint64_t now)
{
    if (now - o->last_confirm_ns < CONFIRM_INTERVAL_NS)
        return;
    o->last_confirm_ns = now;
    uint8_t msg[40];
    for (unsigned i = 0; i < o->stream_count; i++) {
        struct bmt_relayd_stream *st = &o->streams[i];
        if (!st->has_handle || st->querying || st->in_flight == st->unindexed ||
            (st->has_confirmed && st->confirmed_seq == st->indexed_seq))
            continue;
        if (bmt_relayd_command(c, msg, bmt_relayd_encode_data_pending(msg, st->handle,
                                                                      st->indexed_seq),
                               BMT_RELAYD_EXPECT_PENDING, i, st->indexed_seq) != 0)
            break;
        st->querying = 1;
    }
}

void bmt_relayd_outbox_step(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c,
                            const char *trace_dir, uint64_t now_ns)
{
    add_streams(o, c, trace_dir);
    confirm(o, c, now_ns);
}

void bmt_relayd_outbox_handle(struct bmt_relayd_outbox *o, unsigned stream, uint64_t handle)
{
    o->streams[stream].handle = handle;
    o->streams[stream].has_handle = 1;
}

int bmt_relayd_outbox_pending(struct bmt_relayd_outbox *o, unsigned stream, uint64_t seq,
                              uint32_t pending)
{
    struct bmt_relayd_stream *st = &o->streams[stream];
    st->querying = 0;
    if (pending == 0) {
        st->confirmed_seq = seq;
        st->has_confirmed = 1;
    } else if (pending != 1) {
        return -1;
    }
    return 0;
}

/* ---- sending ---- */

/* Queues the index of every record whose data went out. */
static void queue_indexes(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c)
{
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + BMT_RELAYD_INDEX_BYTES];
    while (o->rec_index < o->rec_data) {
        struct bmt_relayd_record *rec = record_at(o, o->rec_index);
        struct bmt_relayd_stream *st = &o->streams[rec->stream];
        struct bmt_relayd_index ix = {
            .relay_stream = st->handle,
            .net_seq_num = rec->net_seq,
            .packet_size_bits = (uint64_t)rec->bytes * 8,
            .content_size_bits = (uint64_t)rec->bytes * 8,
            .timestamp_begin = rec->ts_begin,
            .timestamp_end = rec->ts_end,
            .events_discarded = rec->discarded,
            .stream_class_id = 0,
            .stream_instance_id = rec->stream,
            .packet_seq_num = rec->packet_seq,
        };
        if (bmt_relayd_command(c, msg, bmt_relayd_encode_index(msg, &ix),
                               BMT_RELAYD_EXPECT_GENERIC, 0, 0) != 0)
            break;
        rec->index_sent = 1;
        st->unindexed--;
        st->indexed_seq = rec->net_seq;
        o->rec_index++;
    }
}

/* Sends what `fd` takes of the record at rec_data: its data header, then
 * its bytes, the queue's oldest. Returns 1 when the record went whole, 0
 * when the socket is full, or a negative errno. */
static int send_record(struct bmt_relayd_outbox *o, int fd, const struct bmt_relayd_record *rec)
{
    size_t total = BMT_RELAYD_DATA_HEADER_BYTES + rec->bytes;
    while (o->data_off < total) {
        struct iovec iov[3];
        int n = 0;
        size_t payload_sent = 0;
        if (o->data_off < BMT_RELAYD_DATA_HEADER_BYTES) {
            iov[n].iov_base = o->data_hdr + o->data_off;
            iov[n].iov_len = BMT_RELAYD_DATA_HEADER_BYTES - o->data_off;
            n++;
        } else {
            payload_sent = o->data_off - BMT_RELAYD_DATA_HEADER_BYTES;
        }
        /* The queue's oldest bytes are this record's unsent ones. */
        n += bmt_byteq_iov(&o->data, rec->bytes - payload_sent, iov + n);
        struct msghdr mh = {0};
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)n;
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            return -errno;
        }
        size_t before = o->data_off;
        o->data_off += (size_t)w;
        size_t hdr_part = before < BMT_RELAYD_DATA_HEADER_BYTES
                              ? (o->data_off < BMT_RELAYD_DATA_HEADER_BYTES
                                     ? o->data_off - before
                                     : BMT_RELAYD_DATA_HEADER_BYTES - before)
                              : 0;
        bmt_byteq_drop(&o->data, (size_t)w - hdr_part);
    }
    return 1;
}

/* Sends records' packets while their streams have handles. */
static int send_data(struct bmt_relayd_outbox *o, int fd)
{
    while (o->rec_data < o->rec_first + o->rec_count) {
        struct bmt_relayd_record *rec = record_at(o, o->rec_data);
        struct bmt_relayd_stream *st = &o->streams[rec->stream];
        if (!st->has_handle)
            return 0;
        if (o->data_off == 0)
            bmt_relayd_put_data_header(o->data_hdr, st->handle, rec->net_seq, rec->bytes, 0);
        int rc = send_record(o, fd, rec);
        if (rc <= 0)
            return rc;
        o->data_off = 0;
        st->data_sent = 1;
        o->rec_data++;
    }
    return 0;
}

int bmt_relayd_outbox_send(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c, int fd)
{
    int rc = send_data(o, fd);
    queue_indexes(o, c);
    return rc;
}

int bmt_relayd_outbox_ready(const struct bmt_relayd_outbox *o)
{
    return o->rec_data < o->rec_first + o->rec_count &&
           o->streams[record_at(o, o->rec_data)->stream].has_handle;
}

/* ---- packets ---- */

/* Appends a record for `bytes` of packet (header `head`, already numbered
 * for the copy, then `body`) of stream `i`; the caller checked the room. */
static void push_record(struct bmt_relayd_outbox *o, unsigned i, const uint8_t *head,
                        const uint8_t *body, size_t bytes, uint32_t events)
{
    struct bmt_relayd_stream *st = &o->streams[i];
    bmt_byteq_push(&o->data, head, BMT_PKT_HEADER_BYTES);
    bmt_byteq_push(&o->data, body, bytes - BMT_PKT_HEADER_BYTES);
    struct bmt_relayd_record *rec = record_at(o, o->rec_first + o->rec_count);
    o->rec_count++;
    rec->stream = i;
    rec->events = events;
    rec->bytes = (uint32_t)bytes;
    rec->index_sent = 0;
    rec->net_seq = st->next_net_seq++;
    rec->ts_begin = bmt_get_u64(head + BMT_PKT_TS_BEGIN);
    rec->ts_end = bmt_get_u64(head + BMT_PKT_TS_END);
    rec->discarded = bmt_get_u64(head + BMT_PKT_EVENTS_DISCARDED);
    rec->packet_seq = bmt_get_u64(head + BMT_PKT_SEQ_NUM);
    st->in_flight++;
    st->unindexed++;
    st->ever = 1;
    if (rec->ts_end > st->last_ts_end)
        st->last_ts_end = rec->ts_end;
}

/* Numbers header `head` as stream `st`'s next packet in the copy, with
 * `discarded` as its loss count. */
static void number_packet(struct bmt_relayd_stream *st, uint8_t *head, size_t bytes,
                          uint64_t discarded)
{
    bmt_put_u64(head + BMT_PKT_SEQ_NUM, st->next_packet_seq++);
    bmt_put_u64(head + BMT_PKT_EVENTS_DISCARDED, discarded);
    bmt_put_u64(head + BMT_PKT_PACKET_SIZE, (uint64_t)bytes * 8);
    bmt_put_u64(head + BMT_PKT_CONTENT_SIZE, (uint64_t)bytes * 8);
}

/* Queues a copy of `pkt` for stream `i`, or counts it lost.
 *
 * A stream's first packet in the copy never carries a loss: readers count
 * losses as the growth of events_discarded from one packet to the next,
 * and of a first packet's count babeltrace2 says only that events "may"
 * have been discarded. So when the first packet would carry one, an empty
 * packet with none, stamped at the recording's start (before any event of
 * the stream; plus the stream's number in ns, as open_live), goes before
 * it, and the loss shows as a number. */
static void queue_packet(struct bmt_relayd_outbox *o, unsigned i, const uint8_t *pkt,
                         size_t bytes, uint32_t events, int accept)
{
    struct bmt_relayd_stream *st = &o->streams[i];
    uint64_t discarded = bytes >= BMT_PKT_HEADER_BYTES
                             ? bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED) + st->upstream_lost +
                                   st->net_lost
                             : 0;
    size_t opening = !st->ever && discarded > 0 ? BMT_PKT_HEADER_BYTES : 0;
    if (!accept || o->rec_count + 1 + (opening > 0) > MAX_RECORDS ||
        bytes < BMT_PKT_HEADER_BYTES || bytes > UINT32_MAX ||
        bmt_byteq_room(&o->data) < bytes + opening) {
        st->net_lost += events;
        o->lost += events;
        return;
    }
    uint8_t head[BMT_PKT_HEADER_BYTES];
    if (opening) {
        uint64_t ts = o->start_ns + i;
        bmt_ctf_packet_open(head, o->uuid, i, ts);
        bmt_ctf_packet_close(head, ts, sizeof head, 0, 0);
        number_packet(st, head, sizeof head, 0);
        push_record(o, i, head, head + sizeof head, sizeof head, 0);
    }
    /* The copy's header: numbered for the relayd's copy, which may have
     * lost packets the ring did not, and its own losses added. */
    memcpy(head, pkt, sizeof head);
    number_packet(st, head, bytes, discarded);
    push_record(o, i, head, pkt + sizeof head, bytes, events);
    st->last_ring_discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
}

void bmt_relayd_outbox_packet(struct bmt_relayd_outbox *o, unsigned stream, const uint8_t *pkt,
                              size_t bytes, uint32_t events, int accept)
{
    if (stream < o->stream_count)
        queue_packet(o, stream, pkt, bytes, events, accept);
}

void bmt_relayd_outbox_lose(struct bmt_relayd_outbox *o, unsigned stream, uint64_t events)
{
    if (stream < o->stream_count)
        o->streams[stream].upstream_lost += events;
}

void bmt_relayd_outbox_beacon(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c,
                              unsigned stream, uint64_t idle_until_ns, uint64_t now_ns,
                              uint64_t period_ns)
{
    if (stream >= o->stream_count)
        return;
    struct bmt_relayd_stream *st = &o->streams[stream];
    if (!st->has_handle || !st->data_sent || st->unindexed > 0 ||
        now_ns - st->last_beacon_ns < period_ns)
        return;
    /* Never before what the stream already said: viewers need its time to
     * go forward. Less the stream's number in ns: streams idle together
     * would otherwise say the same time, which babeltrace2 warns it cannot
     * order (an earlier time claims less, so this is always safe). */
    uint64_t until = idle_until_ns > stream ? idle_until_ns - stream : idle_until_ns;
    uint64_t ts = until > st->last_ts_end ? until : st->last_ts_end;
    struct bmt_relayd_index ix = {0};
    ix.relay_stream = st->handle;
    ix.net_seq_num = st->next_net_seq - 1;
    ix.timestamp_end = ts;
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + BMT_RELAYD_INDEX_BYTES];
    if (bmt_relayd_command(c, msg, bmt_relayd_encode_index(msg, &ix), BMT_RELAYD_EXPECT_GENERIC,
                           0, 0) == 0)
        st->last_beacon_ns = now_ns;
}

/* A header-only packet for stream `i`, stamped `ts_ns`, carrying the
 * ring's loss count `ring_discarded` (the client adds its own). */
static void queue_empty_packet(struct bmt_relayd_outbox *o, unsigned i, uint64_t ts_ns,
                               uint64_t ring_discarded)
{
    uint8_t pkt[BMT_PKT_HEADER_BYTES];
    bmt_ctf_packet_open(pkt, o->uuid, i, ts_ns);
    bmt_ctf_packet_close(pkt, ts_ns, sizeof pkt, 0, ring_discarded);
    queue_packet(o, i, pkt, sizeof pkt, 0, 1);
}

/* Live sessions: every stream exists, with a packet, from the start of a
 * connection. A viewer must never meet a stream whose first packet is
 * older than what it has already shown from the others (babeltrace2 stops
 * with an error), which a stream added when its thread first records
 * could be; and a relayd honours a stream's beacons only once the stream
 * has a packet. The packet is empty, stamped no later than anything the
 * stream will send: its last packet's end, or the recording's start plus
 * the stream's number in ns (the start precedes any event by the whole
 * session start, milliseconds; distinct times spare babeltrace2 a warning
 * per stream that it cannot order identical messages). */
void bmt_relayd_outbox_open_live(struct bmt_relayd_outbox *o)
{
    for (unsigned i = 0; i < o->stream_count; i++) {
        struct bmt_relayd_stream *st = &o->streams[i];
        if (st->in_flight == 0)
            queue_empty_packet(o, i, st->ever ? st->last_ts_end : o->start_ns + i,
                               st->last_ring_discarded);
    }
}

/* ---- the end ---- */

int bmt_relayd_outbox_sealed(struct bmt_relayd_outbox *o, const uint64_t *ring_discarded,
                             unsigned count, uint64_t ts_ns)
{
    int done = o->rec_count == 0;
    for (unsigned i = 0; i < count && i < o->stream_count; i++) {
        struct bmt_relayd_stream *st = &o->streams[i];
        uint64_t ring = ring_discarded ? ring_discarded[i] : 0;
        uint64_t target = ring + st->upstream_lost + st->net_lost;
        if ((!st->ever && target == 0) || (st->ever && st->in_flight == 0 && st->stamped == target))
            continue;
        done = 0;
        if (st->in_flight > 0)
            continue;
        /* A header-only packet carrying the count, as trace_dir.c seals a
         * stream file. */
        queue_empty_packet(o, i, ts_ns > st->last_ts_end ? ts_ns : st->last_ts_end, ring);
    }
    return done;
}

void bmt_relayd_outbox_close_streams(struct bmt_relayd_outbox *o, struct bmt_relayd_control *c)
{
    uint8_t msg[48];
    for (unsigned i = 0; i < o->stream_count; i++)
        if (o->streams[i].has_handle)
            bmt_relayd_command(c, msg,
                               bmt_relayd_encode_close_stream(msg, o->streams[i].handle,
                                                              o->streams[i].next_net_seq - 1),
                               BMT_RELAYD_EXPECT_GENERIC, 0, 0);
}
