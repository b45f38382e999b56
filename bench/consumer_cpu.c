/* The consumer thread's CPU per event written: one writer thread records
 * call-sized events through the recorder (c_src/recorder/) as a traced
 * process would, the consumer writes them to DIR; the consumer's user and
 * system CPU (from /proc/self/task/TID/stat) are divided by the events
 * written. No VM: the figure is the consumer's alone.
 * Usage: consumer_cpu DIR [EVENTS] [BUFFER_BYTES]
 */
#include "recorder/recorder.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct bmt_recorder rec;

/* utime + stime of the thread named `name`, in clock ticks. */
static long thread_ticks(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    long total = -1;
    while (d && (e = readdir(d))) {
        char path[300], comm[64] = "", stat[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(comm, sizeof comm, f))
            comm[0] = 0;
        fclose(f);
        comm[strcspn(comm, "\n")] = 0;
        if (strcmp(comm, name) != 0)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(stat, sizeof stat, f)) {
            /* Fields after the ")" : state is 3rd; utime 14th, stime 15th. */
            char *p = strrchr(stat, ')');
            long ut = 0, st = 0;
            if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut,
                            &st) == 2)
                total = ut + st;
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return total;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: consumer_cpu DIR [EVENTS] [BUFFER_BYTES]\n");
        return 2;
    }
    long n = argc > 2 ? atol(argv[2]) : 20000000;
    size_t buffer = argc > 3 ? (size_t)atol(argv[3]) : 32u << 20;
    if (bmt_rec_init(&rec, 4, NULL, NULL) != 0)
        return 1;
    struct bmt_rec_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.dir, sizeof cfg.dir, "%s", argv[1]);
    cfg.enable_mask = UINT64_C(1) << BMT_TP_function_call;
    cfg.mode = BMT_RING_DISCARD;
    cfg.subbuf_count = 8;
    cfg.subbuf_bytes = buffer / 8;
    cfg.message_max_bytes = 255;
    cfg.flush_interval_ns = 1000000000;
    cfg.wake_on_publish = 1;
    bmt_ctf_trace_info_init(&cfg.info);
    int index;
    uint64_t gen;
    int rc = bmt_rec_start(&rec, &cfg, 255, 1, &index, &gen);
    if (rc != 0) {
        fprintf(stderr, "consumer_cpu: cannot start a session in %s: %s\n", argv[1], strerror(-rc));
        return 1;
    }
    struct bmt_session *s = &rec.sessions[index];
    struct bmt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.id = BMT_TP_function_call;
    ev.values[BMT_F_function_call_pid].str = "<0.1234.0>";
    ev.values[BMT_F_function_call_pid].len = 10;
    ev.values[BMT_F_function_call_entry].str = "bench_mod:f/1";
    ev.values[BMT_F_function_call_entry].len = 13;
    for (long i = 0; i < n; i++) {
        uint64_t ts = bmt_clock_ns();
        struct bmt_ring *r = bmt_rec_enter(s, gen, 0);
        if (!r)
            continue;
        uint8_t *start;
        uint8_t *dst = bmt_rec_reserve(s, r, ev.id, ts, &start);
        if (dst)
            bmt_rec_commit(r, start, dst + bmt_event_encode_payload(&ev, dst), ts);
        bmt_rec_leave(s, r, ts);
        /* About 2 M events/s, a busy node's rate, so the disk keeps up. */
        if (i % 2000 == 1999) {
            struct timespec t = {0, 1000000};
            nanosleep(&t, NULL);
        }
    }
    long ticks = thread_ticks("beamtrace_cons");
    struct bmt_rec_stats st;
    bmt_rec_stop(&rec, index, gen, &st);
    double ns = (double)ticks * 1e9 / (double)sysconf(_SC_CLK_TCK);
    printf("CONSUMER events %llu discarded %llu bytes %llu consumer_cpu_ns_per_event %.1f"
           " bytes_per_event %.1f\n",
           (unsigned long long)st.events, (unsigned long long)st.discarded,
           (unsigned long long)st.bytes, st.events ? ns / (double)st.events : 0.0,
           st.events ? (double)st.bytes / (double)st.events : 0.0);
    bmt_rec_destroy(&rec);
    return 0;
}
