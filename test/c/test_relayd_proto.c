/* Unit tests of the relayd wire format (c_src/recorder/relayd_proto.c) and
 * the send queue (relayd_queue.h), without a relayd: every message byte for
 * byte against the layouts of lttng-tools' relayd.h (packed, big-endian;
 * offsets worked out here from the structs, field by field), the URL forms
 * `lttng create --set-url' takes and the ones it refuses, and the queue
 * against a reference model through wrap-around. And the client's
 * allocations (linked with -Wl,--wrap=malloc,--wrap=calloc): each failure
 * in bmt_relayd_new returns NULL with nothing leaked (AddressSanitizer's
 * leak check), and offering packets, losing events and pumping never
 * allocate (they run on the consumer thread). And the control
 * connection's framing (relayd_control.c) over a socketpair: replies
 * matched to their commands in order, whatever pieces they come in, and
 * the replies that must end a connection.
 */
#include "recorder/relayd_client.h"
#include "recorder/relayd_control.h"
#include "recorder/relayd_proto.h"
#include "recorder/relayd_queue.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the failing allocator ---- */

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
static long fail_at = -1; /* the Nth allocation from arm() fails; -1: none; 0: all */
static long allocations;

static void arm(long n)
{
    fail_at = n;
    allocations = 0;
}

static int should_fail(void)
{
    if (fail_at < 0)
        return 0;
    return fail_at == 0 || ++allocations == fail_at;
}

void *__wrap_malloc(size_t size)
{
    return should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : __real_calloc(n, size);
}

static uint64_t be64(const uint8_t *p)
{
    return bmt_relayd_get_be64(p);
}

static uint32_t be32(const uint8_t *p)
{
    return bmt_relayd_get_be32(p);
}

/* lttcomm_relayd_hdr: circuit_id u64, data_size u64, cmd u32, cmd_version u32. */
static int header_is(const uint8_t *m, uint32_t cmd, uint64_t payload)
{
    return be64(m) == 0 && be64(m + 8) == payload && be32(m + 16) == cmd && be32(m + 20) == 0;
}

static void test_fixed_commands(void)
{
    uint8_t m[128];
    CHECK(bmt_relayd_encode_version(m, 2, 13) == 32);
    CHECK(header_is(m, 5, 8) && be32(m + 24) == 2 && be32(m + 28) == 13);

    /* lttcomm_relayd_create_trace_chunk: chunk_id u64, creation_timestamp
     * u64, override_name_length u32. */
    CHECK(bmt_relayd_encode_create_chunk(m, 7, 1700000000) == 44);
    CHECK(header_is(m, 19, 20) && be64(m + 24) == 7 && be64(m + 32) == 1700000000 &&
          be32(m + 40) == 0);

    /* lttcomm_relayd_close_trace_chunk: chunk_id u64, close_timestamp u64,
     * close_command {is_set u8, value u32} packed. */
    CHECK(bmt_relayd_encode_close_chunk(m, 7, 1700000099) == 45);
    CHECK(header_is(m, 20, 21) && be64(m + 24) == 7 && be64(m + 32) == 1700000099 &&
          m[40] == 0 && be32(m + 41) == 0);

    CHECK(bmt_relayd_encode_streams_sent(m) == 24 && header_is(m, 16, 0));

    /* lttcomm_relayd_close_stream / data_pending: stream_id u64,
     * last_net_seq_num u64. */
    CHECK(bmt_relayd_encode_close_stream(m, 42, UINT64_MAX) == 40);
    CHECK(header_is(m, 7, 16) && be64(m + 24) == 42 && be64(m + 32) == UINT64_MAX);
    CHECK(bmt_relayd_encode_data_pending(m, 42, 9) == 40);
    CHECK(header_is(m, 8, 16) && be64(m + 24) == 42 && be64(m + 32) == 9);

    /* SEND_METADATA: the header's data_size counts the 12-byte
     * lttcomm_relayd_metadata_payload header and the text, not padding. */
    CHECK(bmt_relayd_encode_metadata_header(m, 3, 1000) == 36);
    CHECK(header_is(m, 6, 1012) && be64(m + 24) == 3 && be32(m + 32) == 0);

    /* lttcomm_relayd_data_hdr: circuit_id, stream_id, net_seq_num u64,
     * data_size, padding_size u32. */
    bmt_relayd_put_data_header(m, 5, 77, 4096, 0);
    CHECK(be64(m) == 0 && be64(m + 8) == 5 && be64(m + 16) == 77 && be32(m + 24) == 4096 &&
          be32(m + 28) == 0);
    tap_group("relayd proto: fixed-size commands byte for byte (relayd.h layouts)");
}

static void test_index(void)
{
    uint8_t m[128];
    struct bmt_relayd_index ix = {1, 2, 3 * 8, 3 * 8 - 8, 100, 200, 5, 0, 9, 11};
    CHECK(bmt_relayd_encode_index(m, &ix) == 104);
    /* lttcomm_relayd_index, minor >= 8: ten u64s. */
    CHECK(header_is(m, 13, 80));
    uint64_t want[10] = {1, 2, 24, 16, 100, 200, 5, 0, 9, 11};
    for (int i = 0; i < 10; i++)
        CHECKF(be64(m + 24 + 8 * i) == want[i], "index field %d", i);
    tap_group("relayd proto: SEND_INDEX (packet index and live beacon layout)");
}

static void test_create_session(void)
{
    uint8_t m[2048];
    struct bmt_relayd_session_args a = {0};
    a.session_name = "beamtrace";
    a.hostname = "h1";
    a.base_path = "";
    a.live_timer_us = 1000000;
    a.name_contains_creation_time = 0;
    for (int i = 0; i < 16; i++)
        a.sessiond_uuid[i] = (uint8_t)(i + 1);
    a.session_id = 1;
    a.creation_time_s = 1700000000;
    long len = bmt_relayd_encode_create_session(m, sizeof m, &a);
    /* lttcomm_relayd_create_session_2_11: three u32 lengths, live_timer
     * u32, snapshot u8, name_contains_creation_time u8, sessiond_uuid[16],
     * session_id u64, creation_time u64, current_chunk_id {is_set u8, value
     * u64}: 59 bytes, then the names with their NULs. */
    size_t payload = 59 + 10 + 3 + 1;
    CHECKF(len == (long)(24 + payload), "length %ld", len);
    CHECK(header_is(m, 2, payload));
    const uint8_t *p = m + 24;
    CHECK(be32(p) == 10 && be32(p + 4) == 3 && be32(p + 8) == 1);
    CHECK(be32(p + 12) == 1000000 && p[16] == 0 && p[17] == 0);
    CHECK(memcmp(p + 18, a.sessiond_uuid, 16) == 0);
    CHECK(be64(p + 34) == 1 && be64(p + 42) == 1700000000 && p[50] == 0 && be64(p + 51) == 0);
    CHECK(memcmp(p + 59, "beamtrace\0h1\0\0", 14) == 0);

    /* What the relayd's is_name_path_safe refuses, refused here first. */
    a.session_name = "a/b";
    CHECK(bmt_relayd_encode_create_session(m, sizeof m, &a) == -EINVAL);
    a.session_name = ".hidden";
    CHECK(bmt_relayd_encode_create_session(m, sizeof m, &a) == -EINVAL);
    a.session_name = "";
    CHECK(bmt_relayd_encode_create_session(m, sizeof m, &a) == -EINVAL);
    a.session_name = "ok";
    a.base_path = "x/../y";
    CHECK(bmt_relayd_encode_create_session(m, sizeof m, &a) == -EINVAL);
    a.base_path = "";
    memset(a.sessiond_uuid, 0, 16); /* the nil uuid means a pre-2.11 peer */
    CHECK(bmt_relayd_encode_create_session(m, sizeof m, &a) == -EINVAL);
    a.sessiond_uuid[0] = 1;
    CHECK(bmt_relayd_encode_create_session(m, 40, &a) == -ENOSPC);
    tap_group("relayd proto: CREATE_SESSION 2.11 layout and the names it refuses");
}

static void test_add_stream(void)
{
    uint8_t m[8192];
    long len = bmt_relayd_encode_add_stream(m, sizeof m, "channel0_3", "ust/pid/beam.smp-1-x", 0);
    /* lttcomm_relayd_add_stream_2_11: channel_name_len, pathname_len u32,
     * tracefile_size, tracefile_count, trace_chunk_id u64: 32 bytes. */
    size_t payload = 32 + 11 + 21;
    CHECK(len == (long)(24 + payload) && header_is(m, 1, payload));
    CHECK(be32(m + 24) == 11 && be32(m + 28) == 21 && be64(m + 32) == 0 && be64(m + 40) == 0 &&
          be64(m + 48) == 0);
    CHECK(memcmp(m + 56, "channel0_3\0ust/pid/beam.smp-1-x\0", 32) == 0);
    CHECK(bmt_relayd_encode_add_stream(m, sizeof m, "a/b", "p", 0) == -EINVAL);
    CHECK(bmt_relayd_encode_add_stream(m, sizeof m, "c", "../p", 0) == -EINVAL);
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(bmt_relayd_encode_add_stream(m, sizeof m, longname, "p", 0) == -ENAMETOOLONG);
    tap_group("relayd proto: ADD_STREAM 2.11 layout");
}

static void test_url(void)
{
    struct bmt_relayd_url u;
    char why[512];
    CHECK(bmt_relayd_url_parse("net://relay", &u, why, sizeof why) == 0);
    CHECK(strcmp(u.host, "relay") == 0 && u.control_port == 5342 && u.data_port == 5343 &&
          !u.ipv6 && u.base_path[0] == '\0');
    CHECK(bmt_relayd_url_parse("net://relay:6000", &u, why, sizeof why) == 0);
    CHECK(u.control_port == 6000 && u.data_port == 5343); /* as lttng's uri.c */
    CHECK(bmt_relayd_url_parse("net://10.0.0.1:6000:6001/a/b/", &u, why, sizeof why) == 0);
    CHECK(strcmp(u.host, "10.0.0.1") == 0 && u.control_port == 6000 && u.data_port == 6001 &&
          strcmp(u.base_path, "a/b") == 0);
    CHECK(bmt_relayd_url_parse("net6://[::1]:7000:7001", &u, why, sizeof why) == 0);
    CHECK(strcmp(u.host, "::1") == 0 && u.ipv6 && u.control_port == 7000 && u.data_port == 7001);
    CHECK(bmt_relayd_url_parse("net://[::1]", &u, why, sizeof why) == 0 && u.ipv6);
    const char *bad[] = {"tcp://x", "x", "net://", "net://:5342", "net://h:0", "net://h:70000",
                         "net://h:5342:5342", "net://h/../x", "net://[::1", "net://h:1x",
                         "file:///tmp"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        CHECKF(bmt_relayd_url_parse(bad[i], &u, why, sizeof why) == -EINVAL, "%s", bad[i]);
        CHECKF(strstr(why, "expected net://HOST") != NULL, "%s: %s", bad[i], why);
    }
    CHECK(bmt_relayd_name_ok("beamtrace", 255) && !bmt_relayd_name_ok("a/b", 255) &&
          !bmt_relayd_name_ok(".x", 255) && !bmt_relayd_name_ok("", 255) &&
          !bmt_relayd_name_ok("abc", 3));
    tap_group("relayd proto: net:// and net6:// URLs, refusals with the expected form");
}

/* The queue against a plain reference: random pushes and partial drains
 * through many wrap-arounds, bytes compared each time. */
static void test_queue(void)
{
    struct bmt_byteq q;
    CHECK(bmt_byteq_init(&q, 1000) == 0);
    uint8_t *model = malloc(1000);
    size_t model_len = 0;
    uint8_t next = 0;
    srand(7);
    for (int step = 0; step < 20000; step++) {
        if (rand() % 2) {
            size_t n = (size_t)rand() % 300;
            uint8_t buf[300];
            for (size_t i = 0; i < n; i++)
                buf[i] = next++;
            int fits = n <= 1000 - model_len;
            int rc = bmt_byteq_push(&q, buf, n);
            CHECK(rc == (fits ? 0 : -1));
            if (fits) {
                memcpy(model + model_len, buf, n);
                model_len += n;
            } else {
                next = (uint8_t)(next - n);
            }
        } else {
            struct iovec iov[2];
            size_t want = (size_t)rand() % 400;
            int k = bmt_byteq_iov(&q, want, iov);
            size_t got = 0;
            for (int i = 0; i < k; i++) {
                CHECK(memcmp(iov[i].iov_base, model + got, iov[i].iov_len) == 0);
                got += iov[i].iov_len;
            }
            CHECK(got == (want < model_len ? want : model_len));
            size_t drop = got ? (size_t)rand() % (got + 1) : 0;
            bmt_byteq_drop(&q, drop);
            memmove(model, model + drop, model_len - drop);
            model_len -= drop;
        }
        CHECK(q.len == model_len && bmt_byteq_room(&q) == 1000 - model_len);
    }
    free(model);
    bmt_byteq_free(&q);
    tap_group("relayd queue: 20000 random pushes and drains against a reference, through wraps");
}

static void test_allocations(void)
{
    static const char metadata[] = "/* CTF 1.8 */\n";
    struct bmt_relayd_config cfg;
    memset(&cfg, 0, sizeof cfg);
    char why[256];
    CHECK(bmt_relayd_url_parse("net://127.0.0.1:1", &cfg.url, why, sizeof why) == 0);
    CHECK(bmt_relayd_resolve(&cfg, why, sizeof why) == 0);
    strcpy(cfg.session_name, "s");
    strcpy(cfg.hostname, "h");
    cfg.metadata = metadata;
    cfg.metadata_bytes = sizeof metadata - 1;
    cfg.stream_count = 4;
    cfg.queue_bytes = 1 << 20;
    int failures = 0;
    struct bmt_relayd *r = NULL;
    for (long n = 1; n < 100; n++) {
        arm(n);
        r = bmt_relayd_new(&cfg);
        arm(-1);
        if (r)
            break;
        failures++;
    }
    CHECKF(r != NULL && failures >= 5, "new() survives %d failing allocations", failures);
    /* The consumer's calls: none allocates (every allocation fails now). */
    uint8_t pkt[BMT_PKT_HEADER_BYTES + 16] = {0};
    arm(0);
    for (int i = 0; i < 100; i++) {
        bmt_relayd_packet(r, (unsigned)i % 4, pkt, sizeof pkt, 1);
        bmt_relayd_lose(r, 1, 2);
        bmt_relayd_idle(r, 2, 5, 10);
        bmt_relayd_pump(r, (uint64_t)i);
    }
    arm(-1);
    struct bmt_relayd_stats st;
    bmt_relayd_stats_get(r, &st);
    CHECK(st.state == BMT_RELAYD_DISCONNECTED || st.state == BMT_RELAYD_CONNECTING);
    bmt_relayd_free(r);
    tap_group("relayd client: each failing allocation in new() leaks nothing; streaming never allocates");
}


/* Writes `n` bytes of `p` to the peer in pieces of `piece` bytes, reading
 * after each: 1 when the reply completed on the last piece only. */
static int arrives_whole_at_end(struct bmt_relayd_control *c, int ctl, int peer, const uint8_t *p,
                                size_t n, size_t piece, struct bmt_relayd_expect *done)
{
    const char *what = "";
    for (size_t off = 0; off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        if (write(peer, p + off, k) != (ssize_t)k)
            return 0;
        int rc = bmt_relayd_reply_next(c, ctl, done, &what);
        if (rc != (off + k == n ? 1 : 0))
            return 0;
    }
    return 1;
}

static void test_control_framing(void)
{
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    struct bmt_relayd_control c;
    CHECK(bmt_relayd_control_init(&c, 4096) == 0);
    struct bmt_relayd_expect done;
    const char *what = "";
    uint8_t msg[64] = {0}, reply[BMT_RELAYD_REPLY_SESSION_BYTES + 10];
    /* Nothing owed, nothing sent: nothing to do. A command without a
     * reply (SEND_METADATA's) owes none. */
    CHECK(bmt_relayd_reply_next(&c, sv[0], &done, &what) == 0);
    CHECK(bmt_relayd_command(&c, msg, 8, -1, 0, 0) == 0 && c.count == 0 && c.out.len == 8);
    /* Replies in order, byte by byte: VERSION, then a session with a path. */
    CHECK(bmt_relayd_command(&c, msg, 24, BMT_RELAYD_EXPECT_VERSION, 0, 0) == 0);
    CHECK(bmt_relayd_command(&c, msg, 24, BMT_RELAYD_EXPECT_SESSION, 0, 0) == 0);
    CHECK(bmt_relayd_command(&c, msg, 24, BMT_RELAYD_EXPECT_PENDING, 3, 77) == 0);
    memset(reply, 0, sizeof reply);
    reply[3] = 2, reply[7] = 13;
    CHECK(arrives_whole_at_end(&c, sv[0], sv[1], reply, BMT_RELAYD_REPLY_VERSION_BYTES, 1, &done));
    CHECK(done.kind == BMT_RELAYD_EXPECT_VERSION && c.reply[3] == 2 && c.reply[7] == 13);
    memset(reply, 0, sizeof reply);
    reply[15] = 10; /* path length, then the path */
    memcpy(reply + BMT_RELAYD_REPLY_SESSION_BYTES, "host/s-123", 10);
    CHECK(arrives_whole_at_end(&c, sv[0], sv[1], reply, sizeof reply, 3, &done));
    CHECK(done.kind == BMT_RELAYD_EXPECT_SESSION &&
          memcmp(c.reply + BMT_RELAYD_REPLY_SESSION_BYTES, "host/s-123", 10) == 0);
    memset(reply, 0, sizeof reply);
    CHECK(arrives_whole_at_end(&c, sv[0], sv[1], reply, BMT_RELAYD_REPLY_GENERIC_BYTES, 64, &done));
    CHECK(done.kind == BMT_RELAYD_EXPECT_PENDING && done.stream == 3 && done.seq == 77);
    CHECK(c.count == 0);
    /* Late replies: the oldest owed decides. */
    CHECK(bmt_relayd_command(&c, msg, 24, BMT_RELAYD_EXPECT_GENERIC, 0, 0) == 0);
    uint64_t since = c.expect[c.head].since_ns;
    CHECK(!bmt_relayd_control_stalled(&c, since + 1000, 1000) &&
          bmt_relayd_control_stalled(&c, since + 1001, 1000));
    /* A session path longer than the protocol allows ends the connection. */
    bmt_relayd_control_clear(&c);
    CHECK(bmt_relayd_command(&c, msg, 24, BMT_RELAYD_EXPECT_SESSION, 0, 0) == 0);
    memset(reply, 0, sizeof reply);
    reply[14] = 0x7f; /* path length 32512 */
    CHECK(write(sv[1], reply, BMT_RELAYD_REPLY_SESSION_BYTES) == BMT_RELAYD_REPLY_SESSION_BYTES);
    CHECK(bmt_relayd_reply_next(&c, sv[0], &done, &what) == -EPROTO && strstr(what, "longer"));
    /* Bytes nothing asked for, then the relayd closing the connection. */
    bmt_relayd_control_clear(&c);
    uint8_t junk[64];
    while (recv(sv[0], junk, sizeof junk, MSG_DONTWAIT) > 0)
        ;
    CHECK(write(sv[1], "x", 1) == 1);
    CHECK(bmt_relayd_reply_next(&c, sv[0], &done, &what) == -EPROTO && strstr(what, "unexpected"));
    CHECK(recv(sv[0], junk, 1, 0) == 1);
    close(sv[1]);
    CHECK(bmt_relayd_reply_next(&c, sv[0], &done, &what) == -ECONNRESET &&
          strstr(what, "closed"));
    /* A full reply FIFO takes no command (and queues none of its bytes). */
    bmt_relayd_control_clear(&c);
    unsigned n = 0;
    while (bmt_relayd_command(&c, msg, 0, BMT_RELAYD_EXPECT_GENERIC, 0, 0) == 0)
        n++;
    CHECK(n == BMT_RELAYD_MAX_EXPECT && c.out.len == 0);
    bmt_relayd_control_free(&c);
    close(sv[0]);
    tap_group("relayd control: replies matched in order whatever pieces they come in; an over-long "
              "reply, bytes nothing asked for and a close end the connection; a full FIFO refuses");
}

int main(void)
{
    test_fixed_commands();
    test_index();
    test_create_session();
    test_add_stream();
    test_url();
    test_queue();
    test_allocations();
    test_control_framing();
    return tap_exit();
}
