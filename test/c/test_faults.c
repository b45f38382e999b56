/* Fault injection for the trace directory writer (c_src/trace_dir.c).
 *
 * Allocation failures: the binary is linked with -Wl,--wrap=malloc, so every
 * malloc in the core goes through __wrap_malloc below, which fails the Nth
 * allocation after arm(N). bmt_trace_dir_create runs with the 1st, 2nd, ...
 * allocation failing until it succeeds; each failure must be -ENOMEM with no
 * file descriptor left open and no file left behind, and AddressSanitizer's
 * leak check at exit catches anything not freed. Writing packets and closing
 * must not allocate at all (they run on the consumer thread with the session
 * live), which the allocator checks by failing every allocation.
 *
 * I/O failures that hold for root too (CI runs as root): a path under a
 * regular file, a stream file that is a directory, a stream file that is a
 * symlink to /dev/full (disk full: -ENOSPC, sticky, reported by close), a
 * directory that already holds a trace (-EEXIST).
 */
#include "trace_dir.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the failing allocator ---- */

void *__real_malloc(size_t bytes);
void *__wrap_malloc(size_t bytes);

static long alloc_fail_at;  /* 0: disarmed; N: fail the Nth call after arm; -1: fail all */
static long alloc_calls;    /* wrapped calls since arm */

void *__wrap_malloc(size_t bytes)
{
    if (alloc_fail_at != 0) {
        alloc_calls++;
        if (alloc_fail_at < 0 || alloc_calls == alloc_fail_at) {
            errno = ENOMEM;
            return NULL;
        }
    }
    return __real_malloc(bytes);
}

static void arm(long fail_at)
{
    alloc_calls = 0;
    alloc_fail_at = fail_at;
}

static void disarm(void)
{
    alloc_fail_at = 0;
}

/* ---- helpers ---- */

static char base[] = "/tmp/bmt-test-faults-XXXXXX";

static int open_fd_count(void)
{
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return -1;
    int n = 0;
    while (readdir(dir))
        n++;
    closedir(dir);
    return n;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void fixed_info(struct bmt_ctf_trace_info *info)
{
    memset(info, 0, sizeof *info);
    for (int i = 0; i < BMT_CTF_UUID_BYTES; i++)
        info->uuid[i] = (uint8_t)(i * 17);
    strcpy(info->hostname, "faults");
    info->vpid = 1;
    strcpy(info->procname, "test_faults");
}

/* A valid, empty packet (header only). */
static void make_packet(uint8_t pkt[BMT_PKT_HEADER_BYTES])
{
    uint8_t uuid[BMT_CTF_UUID_BYTES];
    for (int i = 0; i < BMT_CTF_UUID_BYTES; i++)
        uuid[i] = (uint8_t)(i * 17);
    bmt_ctf_packet_open(pkt, uuid, 0, 100);
    bmt_ctf_packet_close(pkt, 100, BMT_PKT_HEADER_BYTES, 0, 0);
}

static void path_of(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", base, name);
}

/* ---- cases ---- */

static void test_alloc_failures(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    int fds = open_fd_count();
    long n;
    int created = 0;
    for (n = 1; n < 100 && !created; n++) {
        char dir[256], meta[300];
        snprintf(dir, sizeof dir, "%s/alloc-%ld/trace", base, n);
        snprintf(meta, sizeof meta, "%s/metadata", dir);
        struct bmt_trace_dir d;
        arm(n);
        int rc = bmt_trace_dir_create(&d, dir, &info);
        long calls = alloc_calls;
        disarm();
        if (rc == 0) {
            CHECKF(calls < n, "succeeded although allocation %ld failed", n);
            created = 1;
            /* Writing and closing allocate nothing: fail every allocation. */
            uint8_t pkt[BMT_PKT_HEADER_BYTES];
            make_packet(pkt);
            arm(-1);
            CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt) == 0);
            CHECK(bmt_trace_dir_write_packet(&d, 1, pkt, sizeof pkt) == 0);
            CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt) == 0);
            CHECK(bmt_trace_dir_close(&d) == 0);
            calls = alloc_calls;
            disarm();
            CHECKF(calls == 0, "the packet writer made %ld allocations", calls);
            CHECK(exists(meta));
        } else {
            CHECKF(rc == -ENOMEM, "allocation %ld failed: rc %d, expected -ENOMEM", n, rc);
            CHECKF(!exists(meta), "allocation %ld failed: %s left behind", n, meta);
        }
        CHECKF(open_fd_count() == fds, "allocation %ld: %d fds open, %d before", n,
               open_fd_count(), fds);
    }
    CHECK(created);
    CHECKF(n > 2, "no allocation to fail: the injection did not reach the writer");
    printf("# bmt_trace_dir_create: %ld allocation(s) failed one by one, then success\n", n - 2);
    tap_group("faults: every allocation failure in trace_dir create ends in -ENOMEM, nothing open");
}

static void test_unwritable(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    int fds = open_fd_count();
    char file[256], path[512];

    /* A regular file where a directory should be: fails for root too. */
    path_of(file, sizeof file, "plainfile");
    FILE *f = fopen(file, "w");
    CHECK(f && fclose(f) == 0);
    snprintf(path, sizeof path, "%s/sub/trace", file);
    CHECK(bmt_trace_dir_create(&d, path, &info) == -ENOTDIR);
    CHECK(bmt_trace_dir_create(&d, file, &info) == -ENOTDIR);

    /* procfs refuses new directories, also for root. */
    int rc = bmt_trace_dir_create(&d, "/proc/self/bmt-test-trace", &info);
    CHECKF(rc < 0, "creating a trace in /proc returned %d", rc);

    /* Name longer than the directory path buffer. */
    static char longname[5000];
    memset(longname, 'a', sizeof longname - 1);
    longname[0] = '/';
    CHECK(bmt_trace_dir_create(&d, longname, &info) == -ENAMETOOLONG);
    CHECK(open_fd_count() == fds);
    tap_group("faults: a trace path under a regular file, in procfs or too long is refused");

    /* Mode 0500 stops everyone but root. */
    char ro[256];
    path_of(ro, sizeof ro, "readonly");
    CHECK(mkdir(ro, 0500) == 0);
    snprintf(path, sizeof path, "%s/trace", ro);
    if (geteuid() == 0) {
        tap_skip("faults: a directory with mode 0500 is refused", "running as root");
    } else {
        CHECK(bmt_trace_dir_create(&d, path, &info) == -EACCES);
        CHECK(open_fd_count() == fds);
        tap_group("faults: a directory with mode 0500 is refused");
    }
}

static void test_stream_open_failure(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    uint8_t pkt[BMT_PKT_HEADER_BYTES];
    make_packet(pkt);
    int fds = open_fd_count();
    char dir[256], stream[300];
    path_of(dir, sizeof dir, "isdir");
    CHECK(bmt_trace_dir_create(&d, dir, &info) == 0);
    CHECK(bmt_trace_dir_write_packet(&d, BMT_MAX_STREAMS, pkt, sizeof pkt) == -EINVAL);
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt) == 0); /* -EINVAL is not sticky */
    snprintf(stream, sizeof stream, "%s/channel0_3", dir);
    CHECK(mkdir(stream, 0755) == 0);
    CHECK(bmt_trace_dir_write_packet(&d, 3, pkt, sizeof pkt) == -EISDIR);
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt) == -EISDIR); /* sticky */
    CHECK(bmt_trace_dir_close(&d) == -EISDIR);
    CHECK(bmt_trace_dir_close(&d) == -EISDIR);
    CHECK(open_fd_count() == fds);
    tap_group("faults: a stream file that cannot be opened fails, stays failed, close reports it");
}

static void test_disk_full(void)
{
    if (!exists("/dev/full")) {
        tap_skip("faults: disk full is -ENOSPC, sticky, and reported by close", "no /dev/full");
        return;
    }
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    uint8_t pkt[BMT_PKT_HEADER_BYTES];
    make_packet(pkt);
    int fds = open_fd_count();
    char dir[256], stream[300], other[300];
    path_of(dir, sizeof dir, "full");
    CHECK(bmt_trace_dir_create(&d, dir, &info) == 0);
    snprintf(stream, sizeof stream, "%s/channel0_0", dir);
    snprintf(other, sizeof other, "%s/channel0_1", dir);
    CHECK(symlink("/dev/full", stream) == 0); /* open(O_TRUNC) follows it */
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt) == -ENOSPC);
    CHECK(d.bytes_written == 0);
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt) == -ENOSPC);
    CHECK(bmt_trace_dir_write_packet(&d, 1, pkt, sizeof pkt) == -ENOSPC);
    CHECK(!exists(other)); /* refused before touching the disk */
    CHECK(bmt_trace_dir_close(&d) == -ENOSPC);
    CHECK(bmt_trace_dir_close(&d) == -ENOSPC);
    CHECK(open_fd_count() == fds);
    tap_group("faults: disk full is -ENOSPC, sticky, and reported by close");
}

static void test_existing_trace(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    int fds = open_fd_count();
    char dir[256], meta[300];
    path_of(dir, sizeof dir, "exists");
    CHECK(mkdir(dir, 0755) == 0);
    snprintf(meta, sizeof meta, "%s/metadata", dir);
    FILE *f = fopen(meta, "w");
    CHECK(f && fputs("old trace", f) >= 0 && fclose(f) == 0);
    CHECK(bmt_trace_dir_create(&d, dir, &info) == -EEXIST);
    char buf[64] = {0};
    f = fopen(meta, "r");
    CHECK(f && fread(buf, 1, sizeof buf - 1, f) == 9 && fclose(f) == 0);
    CHECK(strcmp(buf, "old trace") == 0); /* untouched */
    CHECK(open_fd_count() == fds);

    /* And a trace just written cannot be overwritten by a second create. */
    path_of(dir, sizeof dir, "twice/nested/trace");
    CHECK(bmt_trace_dir_create(&d, dir, &info) == 0);
    CHECK(bmt_trace_dir_close(&d) == 0);
    CHECK(bmt_trace_dir_create(&d, dir, &info) == -EEXIST);
    CHECK(open_fd_count() == fds);
    tap_group("faults: a directory already holding a trace is refused with -EEXIST");
}

int main(void)
{
    if (!mkdtemp(base)) {
        printf("not ok - faults: mkdtemp failed\n");
        return 1;
    }
    test_alloc_failures();
    test_unwritable();
    test_stream_open_failure();
    test_disk_full();
    test_existing_trace();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", base, base);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", base);
    return tap_exit();
}
