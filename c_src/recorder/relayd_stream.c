/* The relayd client's streams (contract in relayd_client.h; internals in
 * relayd_client_priv.h; the connection in relayd_client.c).
 *
 * Packets wait as records (what the data header and index need) plus their
 * bytes in the data queue, both FIFO. A record goes out on the data
 * connection once its stream has a relayd handle; its index goes on the
 * control connection after it. Records stay until a DATA_PENDING reply
 * confirms them, so that a broken connection knows exactly which events it
 * took with it.
 */
#define _GNU_SOURCE /* MSG_NOSIGNAL */
#include "relayd_client_priv.h"
#include "core/event.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ---- records ---- */

int bmt_relayd_confirmed(const struct bmt_relayd *r, const struct record *rec)
{
    const struct stream *st = &r->streams[rec->stream];
    return rec->index_sent && st->has_confirmed && rec->net_seq <= st->confirmed_seq;
}

void bmt_relayd_pop_confirmed(struct bmt_relayd *r)
{
    while (r->rec_count > 0) {
        struct record *rec = bmt_relayd_record(r, r->rec_first);
        if (!bmt_relayd_confirmed(r, rec))
            break;
        struct stream *st = &r->streams[rec->stream];
        st->events += rec->events;
        st->stamped = rec->discarded;
        st->in_flight--;
        r->now.events += rec->events;
        r->now.bytes += rec->bytes;
        r->rec_first++;
        r->rec_count--;
    }
}

/* ---- the connection's end ---- */

void bmt_relayd_settle(struct bmt_relayd *r)
{
    for (uint64_t n = 0; n < r->rec_count; n++) {
        struct record *rec = bmt_relayd_record(r, r->rec_first + n);
        struct stream *st = &r->streams[rec->stream];
        if (bmt_relayd_confirmed(r, rec)) {
            st->events += rec->events;
            st->stamped = rec->discarded;
            r->now.events += rec->events;
            r->now.bytes += rec->bytes;
        } else {
            st->net_lost += rec->events;
            r->now.lost += rec->events;
            if (r->rec_first + n < r->rec_data)
                r->now.unconfirmed += rec->events;
        }
        st->in_flight--;
    }
    r->rec_first += r->rec_count;
    r->rec_count = 0;
    r->rec_data = r->rec_index = r->rec_first;
    r->data_off = 0;
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        st->added = st->has_handle = st->querying = st->has_confirmed = st->data_sent = 0;
        st->next_net_seq = 0;
        st->unindexed = 0;
    }
}

/* Adds the streams that have something to send and no relayd stream yet,
 * then publishes them to live viewers. */
static void add_streams(struct bmt_relayd *r)
{
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + 1024];
    int added = 0;
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        if (st->added || st->in_flight == 0)
            continue;
        char channel[32];
        snprintf(channel, sizeof channel, "channel0_%u", i);
        long len = bmt_relayd_encode_add_stream(msg, sizeof msg, channel, r->trace_dir, 0);
        if (len < 0 || bmt_byteq_room(&r->ctl) < (size_t)len + 2 * BMT_RELAYD_CMD_HEADER_BYTES ||
            r->expect_count + 2 > MAX_EXPECT)
            break;
        bmt_relayd_command(r, msg, (size_t)len, R_STREAM, i, 0);
        st->added = 1;
        added = 1;
    }
    if (added)
        bmt_relayd_command(r, msg, bmt_relayd_encode_streams_sent(msg), R_GENERIC, 0, 0);
}

/* Queues the index of every record whose data went out. */
static void queue_indexes(struct bmt_relayd *r)
{
    uint8_t msg[BMT_RELAYD_CMD_HEADER_BYTES + BMT_RELAYD_INDEX_BYTES];
    while (r->rec_index < r->rec_data) {
        struct record *rec = bmt_relayd_record(r, r->rec_index);
        struct stream *st = &r->streams[rec->stream];
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
        if (bmt_relayd_command(r, msg, bmt_relayd_encode_index(msg, &ix), R_GENERIC, 0, 0) != 0)
            break;
        rec->index_sent = 1;
        st->unindexed--;
        st->indexed_seq = rec->net_seq;
        r->rec_index++;
    }
}

/* Asks, once per interval, which streams' packets the relayd has written. */
static void confirm(struct bmt_relayd *r, uint64_t now)
{
    if (now - r->last_confirm_ns < CONFIRM_INTERVAL_NS)
        return;
    r->last_confirm_ns = now;
    uint8_t msg[40];
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        if (!st->has_handle || st->querying || st->in_flight == st->unindexed ||
            (st->has_confirmed && st->confirmed_seq == st->indexed_seq))
            continue;
        if (bmt_relayd_command(r, msg, bmt_relayd_encode_data_pending(msg, st->handle, st->indexed_seq),
                    R_PENDING, i, st->indexed_seq) != 0)
            break;
        st->querying = 1;
    }
}

/* Sends records' packets while their streams have handles. */
static int send_data(struct bmt_relayd *r)
{
    while (r->rec_data < r->rec_first + r->rec_count) {
        struct record *rec = bmt_relayd_record(r, r->rec_data);
        struct stream *st = &r->streams[rec->stream];
        if (!st->has_handle)
            return 0;
        if (r->data_off == 0)
            bmt_relayd_put_data_header(r->data_hdr, st->handle, rec->net_seq, rec->bytes, 0);
        size_t total = BMT_RELAYD_DATA_HEADER_BYTES + rec->bytes;
        while (r->data_off < total) {
            struct iovec iov[3];
            int n = 0;
            size_t payload_sent = 0;
            if (r->data_off < BMT_RELAYD_DATA_HEADER_BYTES) {
                iov[n].iov_base = r->data_hdr + r->data_off;
                iov[n].iov_len = BMT_RELAYD_DATA_HEADER_BYTES - r->data_off;
                n++;
            } else {
                payload_sent = r->data_off - BMT_RELAYD_DATA_HEADER_BYTES;
            }
            /* The queue's oldest bytes are this record's unsent ones. */
            n += bmt_byteq_iov(&r->data, rec->bytes - payload_sent, iov + n);
            struct msghdr mh = {0};
            mh.msg_iov = iov;
            mh.msg_iovlen = (size_t)n;
            ssize_t w = sendmsg(r->data_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return 0;
                return -errno;
            }
            size_t before = r->data_off;
            r->data_off += (size_t)w;
            size_t hdr_part = before < BMT_RELAYD_DATA_HEADER_BYTES
                                  ? (r->data_off < BMT_RELAYD_DATA_HEADER_BYTES
                                         ? r->data_off - before
                                         : BMT_RELAYD_DATA_HEADER_BYTES - before)
                                  : 0;
            bmt_byteq_drop(&r->data, (size_t)w - hdr_part);
        }
        r->data_off = 0;
        st->data_sent = 1;
        r->rec_data++;
    }
    return 0;
}

int bmt_relayd_send_packets(struct bmt_relayd *r)
{
    int rc = send_data(r);
    queue_indexes(r);
    return rc;
}

void bmt_relayd_streams_step(struct bmt_relayd *r, uint64_t now)
{
    add_streams(r);
    confirm(r, now);
}

int bmt_relayd_data_ready(const struct bmt_relayd *r)
{
    return r->rec_data < r->rec_first + r->rec_count &&
           r->streams[bmt_relayd_record(r, r->rec_data)->stream].has_handle;
}

/* ---- packets ---- */

/* Queues a copy of `pkt` for stream `i`, or counts it lost. */
static void queue_packet(struct bmt_relayd *r, unsigned i, const uint8_t *pkt, size_t bytes,
                         uint32_t events)
{
    struct stream *st = &r->streams[i];
    if (r->conn == C_FAILED || r->conn == C_CLOSED || r->rec_count == MAX_RECORDS ||
        bytes < BMT_PKT_HEADER_BYTES || bytes > UINT32_MAX ||
        bmt_byteq_room(&r->data) < bytes) {
        st->net_lost += events;
        r->now.lost += events;
        return;
    }
    /* The copy's header: numbered for the relayd's copy, which may have
     * lost packets the ring did not, and its own losses added. */
    uint8_t head[BMT_PKT_HEADER_BYTES];
    memcpy(head, pkt, sizeof head);
    uint64_t discarded = bmt_get_u64(head + BMT_PKT_EVENTS_DISCARDED) + st->upstream_lost +
                         st->net_lost;
    uint64_t seq = st->next_packet_seq++;
    bmt_put_u64(head + BMT_PKT_SEQ_NUM, seq);
    bmt_put_u64(head + BMT_PKT_EVENTS_DISCARDED, discarded);
    bmt_put_u64(head + BMT_PKT_PACKET_SIZE, (uint64_t)bytes * 8);
    bmt_put_u64(head + BMT_PKT_CONTENT_SIZE, (uint64_t)bytes * 8);
    bmt_byteq_push(&r->data, head, sizeof head);
    bmt_byteq_push(&r->data, pkt + sizeof head, bytes - sizeof head);
    struct record *rec = bmt_relayd_record(r, r->rec_first + r->rec_count);
    r->rec_count++;
    rec->stream = i;
    rec->events = events;
    rec->bytes = (uint32_t)bytes;
    rec->index_sent = 0;
    rec->net_seq = st->next_net_seq++;
    rec->ts_begin = bmt_get_u64(head + BMT_PKT_TS_BEGIN);
    rec->ts_end = bmt_get_u64(head + BMT_PKT_TS_END);
    rec->discarded = discarded;
    rec->packet_seq = seq;
    st->in_flight++;
    st->unindexed++;
    st->ever = 1;
    if (rec->ts_end > st->last_ts_end)
        st->last_ts_end = rec->ts_end;
    st->last_ring_discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED);
}

void bmt_relayd_packet(struct bmt_relayd *r, unsigned stream, const uint8_t *pkt, size_t bytes,
                       uint32_t events)
{
    if (stream < r->cfg.stream_count)
        queue_packet(r, stream, pkt, bytes, events);
}

void bmt_relayd_lose(struct bmt_relayd *r, unsigned stream, uint64_t events)
{
    if (stream < r->cfg.stream_count)
        r->streams[stream].upstream_lost += events;
}

void bmt_relayd_idle(struct bmt_relayd *r, unsigned stream, uint64_t idle_until_ns,
                     uint64_t now_ns)
{
    if (stream >= r->cfg.stream_count || r->cfg.live_timer_us == 0 || r->conn != C_STREAMING)
        return;
    struct stream *st = &r->streams[stream];
    if (!st->has_handle || !st->data_sent || st->unindexed > 0 ||
        now_ns - st->last_beacon_ns < (uint64_t)r->cfg.live_timer_us * 1000)
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
    if (bmt_relayd_command(r, msg, bmt_relayd_encode_index(msg, &ix), R_GENERIC, 0, 0) == 0)
        st->last_beacon_ns = now_ns;
}

/* A header-only packet for stream `i`, stamped `ts_ns`, carrying the
 * ring's loss count `ring_discarded` (the client adds its own). */
static void queue_empty_packet(struct bmt_relayd *r, unsigned i, uint64_t ts_ns,
                               uint64_t ring_discarded)
{
    uint8_t pkt[BMT_PKT_HEADER_BYTES];
    bmt_ctf_packet_open(pkt, r->cfg.uuid, i, ts_ns);
    bmt_ctf_packet_close(pkt, ts_ns, sizeof pkt, 0, ring_discarded);
    queue_packet(r, i, pkt, sizeof pkt, 0);
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
void bmt_relayd_open_live_streams(struct bmt_relayd *r)
{
    for (unsigned i = 0; i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        if (st->in_flight == 0)
            queue_empty_packet(r, i, st->ever ? st->last_ts_end : r->cfg.start_ns + i,
                               st->last_ring_discarded);
    }
}

/* ---- the end ---- */

/* Every stream's relayd copy has its final loss count and everything is
 * confirmed. Queues a closing packet where one is missing. */
static int sealed(struct bmt_relayd *r, const uint64_t *ring_discarded, unsigned count,
                  uint64_t ts_ns)
{
    int done = r->rec_count == 0;
    for (unsigned i = 0; i < count && i < r->cfg.stream_count; i++) {
        struct stream *st = &r->streams[i];
        uint64_t ring = ring_discarded ? ring_discarded[i] : 0;
        uint64_t target = ring + st->upstream_lost + st->net_lost;
        if ((!st->ever && target == 0) || (st->ever && st->in_flight == 0 && st->stamped == target))
            continue;
        done = 0;
        if (st->in_flight > 0 || r->conn != C_STREAMING)
            continue;
        /* A header-only packet carrying the count, as trace_dir.c seals a
         * stream file. */
        queue_empty_packet(r, i, ts_ns > st->last_ts_end ? ts_ns : st->last_ts_end, ring);
    }
    return done;
}

int bmt_relayd_finish(struct bmt_relayd *r, const uint64_t *ring_discarded, unsigned count,
                      uint64_t ts_ns, uint64_t deadline_ns)
{
    int rc = -ETIMEDOUT;
    for (;;) {
        uint64_t now = bmt_relayd_mono_ns();
        if (r->conn == C_FAILED)
            break;
        if (r->conn == C_STREAMING && sealed(r, ring_discarded, count, ts_ns) &&
            r->expect_count == 0 && r->ctl.len == 0) {
            /* Everything is written: close the streams and the chunk, as
             * lttng destroy does, and wait for the answers. */
            uint8_t msg[48];
            for (unsigned i = 0; i < r->cfg.stream_count; i++)
                if (r->streams[i].has_handle)
                    bmt_relayd_command(r, msg,
                            bmt_relayd_encode_close_stream(msg, r->streams[i].handle,
                                                           r->streams[i].next_net_seq - 1),
                            R_GENERIC, 0, 0);
            bmt_relayd_command(r, msg, bmt_relayd_encode_close_stream(msg, r->metadata_handle, UINT64_MAX),
                    R_GENERIC, 0, 0);
            bmt_relayd_command(r, msg, bmt_relayd_encode_close_chunk(msg, 0, (uint64_t)time(NULL)),
                    R_CLOSE_CHUNK, 0, 0);
            r->conn = C_CLOSING;
        }
        if (r->conn == C_CLOSING && r->expect_count == 0 && r->ctl.len == 0) {
            rc = 0;
            break;
        }
        if (now >= deadline_ns)
            break;
        /* Ask for confirmations as often as they can come. */
        r->last_confirm_ns = 0;
        bmt_relayd_step(r, now);
        bmt_relayd_publish(r);
        struct pollfd fds[2];
        int n = bmt_relayd_pollfds(r, fds);
        uint64_t left_ms = (deadline_ns - now) / MS + 1;
        poll(fds, (nfds_t)n, (int)(left_ms < 20 ? left_ms : 20));
    }
    /* What is not confirmed now never will be. */
    int closed = rc == 0;
    char before[sizeof r->now.error_text];
    memcpy(before, r->now.error_text, sizeof before);
    bmt_relayd_drop(r, 0, "");
    if (!closed)
        bmt_relayd_set_error(r, ETIMEDOUT,
                             "lttng-relayd at %s:%u: the trace's end could not be delivered in "
                             "time; the relayd's copy lacks it (counted as discarded)%s%.150s",
                             r->cfg.url.host, r->cfg.url.control_port,
                             before[0] ? "; before: " : "", before);
    r->conn = closed ? C_CLOSED : C_FAILED;
    bmt_relayd_publish(r);
    return rc;
}
