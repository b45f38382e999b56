/* Drives the recorder (c_src/recorder/) streaming to a real lttng-relayd,
 * without a VM: writer threads run the tracer's writer bracket while the
 * session streams; then the session stops and the figures are printed for
 * run.sh to compare with what babeltrace2 reads in the relayd's copy.
 *
 * Usage: stream_recorder URL MODE WRITERS EVENTS [KEY=VALUE...]
 *   MODE  relayd (stream only) | both (and a local copy in LOCALDIR) |
 *         local (no relayd: the baseline for bench/relayd_consumer.sh)
 *   keys  local=DIR       the local copy's directory (MODE both)
 *         live=US         live timer, microseconds (0: not live)
 *         session=NAME    relayd session name, taken as the directory
 *         buffer=BYTES    ring bytes per writer (default 256 KiB)
 *         queue=BYTES     the client's send queue (default 1 MiB)
 *         pause_ms=MS     writers sleep this long every `every` events
 *         every=N
 *         signal_at=N     after N events per writer, print "SIGNAL" and wait
 *                         for a line on stdin before going on (run.sh stops
 *                         or restarts the relayd meanwhile)
 *         poll_info=1     the main thread asks for the live figures every
 *                         millisecond while the writers run (for TSan)
 * Prints "key=value" lines: offered, events, discarded, relayd_events,
 * relayd_lost, relayd_state, relayd_path, connections, disconnections,
 * error, bytes, and what the stopped session left behind: fds_left (open
 * descriptors beyond those before the recorder started) and threads_left
 * (threads beside main); exits 1 on a start failure (the reason on stderr).
 */
#include "recorder/recorder.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_WRITERS 16

static struct bmt_recorder rec;
static struct bmt_session *session;
static uint64_t generation;
static unsigned writer_count;
static uint64_t events_per_writer;
static long pause_ms, pause_every = 1000;
static uint64_t signal_at;
static _Atomic unsigned at_signal;
static _Atomic int resume;

struct writer {
    pthread_t thread;
    unsigned slot;
    _Atomic uint64_t offered;
};
static struct writer writers[MAX_WRITERS];

/* Entries of a /proc/self directory (its "." and ".." not counted). */
static long count_entries(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

static void write_one(struct writer *w, uint64_t seq)
{
    char from[16], to[24];
    static const char msg[] = "{relayd,streaming,test,message}";
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = BMT_TP_message_send;
    snprintf(from, sizeof from, "<0.%u.0>", w->slot);
    snprintf(to, sizeof to, "%llu", (unsigned long long)seq);
    ev.values[BMT_F_message_send_from].str = from;
    ev.values[BMT_F_message_send_from].len = (uint32_t)strlen(from);
    ev.values[BMT_F_message_send_to].str = to;
    ev.values[BMT_F_message_send_to].len = (uint32_t)strlen(to);
    ev.values[BMT_F_message_send_message].str = msg;
    ev.values[BMT_F_message_send_message].len = (uint32_t)(sizeof msg - 1);
    uint64_t ts = bmt_clock_ns();
    w->offered++;
    struct bmt_ring *r = bmt_rec_enter(session, generation, w->slot);
    if (!r)
        return;
    uint8_t *start;
    uint8_t *dst = bmt_rec_reserve(session, r, ev.id, ts, &start);
    if (dst)
        bmt_rec_commit(r, start, dst + bmt_event_encode_payload(&ev, dst), ts);
    bmt_rec_leave(session, r, ts);
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    for (uint64_t seq = 0; seq < events_per_writer; seq++) {
        if (signal_at && seq == signal_at) {
            atomic_fetch_add(&at_signal, 1);
            while (!atomic_load(&resume))
                sleep_ms(5);
        }
        write_one(w, seq);
        if (pause_ms && seq % (uint64_t)pause_every == (uint64_t)pause_every - 1)
            sleep_ms(pause_ms);
    }
    return NULL;
}

static const char *arg(int argc, char **argv, const char *key, const char *def)
{
    size_t n = strlen(key);
    for (int i = 5; i < argc; i++)
        if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=')
            return argv[i] + n + 1;
    return def;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s URL relayd|both WRITERS EVENTS [KEY=VALUE...]\n", argv[0]);
        return 2;
    }
    writer_count = (unsigned)atoi(argv[3]);
    events_per_writer = strtoull(argv[4], NULL, 10);
    if (writer_count < 1 || writer_count > MAX_WRITERS)
        return 2;
    pause_ms = atol(arg(argc, argv, "pause_ms", "0"));
    pause_every = atol(arg(argc, argv, "every", "1000"));
    signal_at = strtoull(arg(argc, argv, "signal_at", "0"), NULL, 10);
    if (pause_every < 1)
        pause_every = 1;

    long fds_before = count_entries("/proc/self/fd");
    if (bmt_rec_init(&rec, MAX_WRITERS, NULL, NULL) != 0)
        return 1;
    struct bmt_rec_config cfg;
    memset(&cfg, 0, sizeof cfg);
    int local_only = strcmp(argv[2], "local") == 0;
    if (strcmp(argv[2], "both") == 0 || local_only)
        snprintf(cfg.dir, sizeof cfg.dir, "%s", arg(argc, argv, "local", "/tmp/bmt-stream-local"));
    cfg.enable_mask = ~UINT64_C(0);
    cfg.mode = BMT_RING_DISCARD;
    cfg.subbuf_count = 4;
    cfg.subbuf_bytes = (size_t)strtoull(arg(argc, argv, "buffer", "262144"), NULL, 10) / 4;
    cfg.message_max_bytes = 64;
    cfg.flush_interval_ns = 200 * 1000 * 1000;
    cfg.wake_on_publish = 1;
    bmt_ctf_trace_info_init(&cfg.info);
    snprintf(cfg.info.node, sizeof cfg.info.node, "stream_recorder@%.200s", cfg.info.hostname);

    struct bmt_relayd_config rc;
    memset(&rc, 0, sizeof rc);
    char why[512];
    if (bmt_relayd_url_parse(argv[1], &rc.url, why, sizeof why) != 0 ||
        bmt_relayd_resolve(&rc, why, sizeof why) != 0) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    const char *name = arg(argc, argv, "session", NULL);
    snprintf(rc.session_name, sizeof rc.session_name, "%s", name ? name : "beamtrace");
    rc.name_is_final = name != NULL;
    snprintf(rc.hostname, sizeof rc.hostname, "%.63s", cfg.info.hostname);
    snprintf(rc.procname, sizeof rc.procname, "stream_recorder");
    rc.vpid = getpid();
    rc.start_time_s = (uint64_t)time(NULL);
    rc.start_ns = bmt_clock_ns();
    rc.live_timer_us = (uint32_t)atol(arg(argc, argv, "live", "0"));
    static char metadata[64 * 1024];
    long mlen = bmt_ctf_metadata(&cfg.info, metadata, sizeof metadata);
    if (mlen < 0)
        return 1;
    rc.metadata = metadata;
    rc.metadata_bytes = (size_t)mlen;
    memcpy(rc.uuid, cfg.info.uuid, sizeof rc.uuid);
    rc.stream_count = MAX_WRITERS;
    rc.queue_bytes = (size_t)strtoull(arg(argc, argv, "queue", "1048576"), NULL, 10);
    cfg.relayd = local_only ? NULL : bmt_relayd_new(&rc);
    if (!cfg.relayd && !local_only)
        return 1;
    if (rc.live_timer_us)
        cfg.flush_interval_ns = (uint64_t)rc.live_timer_us * 1000;

    int index;
    int err = bmt_rec_start(&rec, &cfg, 0, 1, &index, &generation);
    if (err != 0 && !cfg.relayd) {
        fprintf(stderr, "start: %s\n", strerror(-err));
        return 1;
    }
    if (err != 0) {
        struct bmt_relayd_stats st;
        bmt_relayd_stats_get(cfg.relayd, &st);
        fprintf(stderr, "start: %s (%s)\n", strerror(-err), st.error_text);
        bmt_relayd_free(cfg.relayd);
        return 1;
    }
    session = &rec.sessions[index];
    printf("started\n");
    fflush(stdout);

    for (unsigned i = 0; i < writer_count; i++) {
        writers[i].slot = i;
        pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]);
    }
    if (signal_at) {
        while (atomic_load(&at_signal) < writer_count)
            sleep_ms(5);
        /* Wait until everything offered so far is delivered or counted
         * lost (the partial packets flushed, every packet confirmed), so
         * that what run.sh does to the relayd next meets nothing in
         * flight. */
        uint64_t so_far = 0;
        for (unsigned i = 0; i < writer_count; i++)
            so_far += atomic_load(&writers[i].offered);
        struct bmt_rec_stats mid;
        int state;
        char dir[4096];
        for (int tries = 0; tries < 1000; tries++) {
            bmt_rec_info(&rec, index, generation, &state, &mid, dir, sizeof dir);
            if (mid.events + mid.discarded == so_far && mid.relayd.queued_bytes == 0)
                break;
            sleep_ms(10);
        }
        printf("SIGNAL relayd_events=%llu relayd_path=%s\n",
               (unsigned long long)mid.relayd.events, mid.relayd.path);
        fflush(stdout);
        char line[64];
        if (!fgets(line, sizeof line, stdin)) {
        }
        atomic_store(&resume, 1);
    }
    if (atoi(arg(argc, argv, "poll_info", "0"))) {
        struct bmt_rec_stats live;
        int state;
        char dir[4096];
        uint64_t polls = 0, last = 0;
        for (;;) {
            uint64_t so_far = 0;
            for (unsigned i = 0; i < writer_count; i++)
                so_far += atomic_load(&writers[i].offered);
            if (so_far >= writer_count * events_per_writer)
                break;
            bmt_rec_info(&rec, index, generation, &state, &live, dir, sizeof dir);
            if (live.relayd.events < last) {
                fprintf(stderr, "relayd events went backwards: %llu < %llu\n",
                        (unsigned long long)live.relayd.events, (unsigned long long)last);
                return 1;
            }
            last = live.relayd.events;
            polls++;
            sleep_ms(1);
        }
        printf("info_polls=%llu\n", (unsigned long long)polls);
    }
    uint64_t offered = 0;
    for (unsigned i = 0; i < writer_count; i++) {
        pthread_join(writers[i].thread, NULL);
        offered += writers[i].offered;
    }
    struct bmt_rec_stats st;
    bmt_rec_stop(&rec, index, generation, &st);
    printf("offered=%llu\nevents=%llu\ndiscarded=%llu\nbytes=%llu\n", (unsigned long long)offered,
           (unsigned long long)st.events, (unsigned long long)st.discarded,
           (unsigned long long)st.bytes);
    printf("relayd_unconfirmed=%llu\n", (unsigned long long)st.relayd.unconfirmed);
    printf("relayd_events=%llu\nrelayd_lost=%llu\nrelayd_state=%s\nrelayd_path=%s\n"
           "connections=%u\ndisconnections=%u\nerror=%s\n",
           (unsigned long long)st.relayd.events, (unsigned long long)st.relayd.lost,
           bmt_relayd_state_name(st.relayd.state), st.relayd.path, st.relayd.connections,
           st.relayd.disconnections, st.relayd.error_text);
    bmt_rec_destroy(&rec);
    printf("fds_left=%ld\nthreads_left=%ld\n", count_entries("/proc/self/fd") - fds_before,
           count_entries("/proc/self/task") - 1);
    return 0;
}
