/* Fault injection for the trace directory writer (c_src/core/trace_dir.c).
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
 * Write failures: also linked with -Wl,--wrap=pwrite, which can make the
 * Nth write fail with ENOSPC, or write only part of its buffer first (a
 * full disk does that). Whatever fails, the stream file must end at its last
 * whole packet, the lost events must be counted, and the final header-only
 * packet must carry the count (giving up the last packet when even that does
 * not fit). babeltrace2 reads the result (test_ctf covers the reader side).
 *
 * Safety that holds for root too (CI runs as root): files and directory are
 * private whatever the umask; a planted symlink (as the directory, or as a
 * stream file) is refused and its target untouched; a directory holding
 * anything, or owned by someone else, is refused; a path under a regular
 * file, in procfs, or too long is refused.
 */
#include "core/trace_dir.h"
#include "core/event.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* ---- the failing disk ---- */

ssize_t __real_pwrite(int fd, const void *buf, size_t count, off_t offset);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t count, off_t offset);

static long write_fail_from; /* 0: disarmed; N: the Nth write and all later ones fail */
static long write_calls;
static size_t write_partial; /* the first failing write first writes this many bytes */
static int write_einval_next; /* the next write fails with EINVAL (O_DIRECT refused) */

ssize_t __wrap_pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    if (write_einval_next) {
        write_einval_next = 0;
        errno = EINVAL;
        return -1;
    }
    if (write_fail_from != 0 && ++write_calls >= write_fail_from) {
        if (write_partial && count > write_partial) {
            size_t part = write_partial;
            write_partial = 0;
            return __real_pwrite(fd, buf, part, offset);
        }
        errno = ENOSPC;
        return -1;
    }
    return __real_pwrite(fd, buf, count, offset);
}

static void disk_full_from(long nth, size_t partial)
{
    write_calls = 0;
    write_partial = partial;
    write_fail_from = nth;
}

static void disk_ok(void)
{
    write_fail_from = 0;
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
        int rc = bmt_trace_dir_create(&d, dir, 0, &info, 0, 0);
        long calls = alloc_calls;
        disarm();
        if (rc == 0) {
            CHECKF(calls < n, "succeeded although allocation %ld failed", n);
            created = 1;
            /* Writing and closing allocate nothing: fail every allocation. */
            uint8_t pkt[BMT_PKT_HEADER_BYTES];
            make_packet(pkt);
            arm(-1);
            CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt, sizeof pkt, 0) == 0);
            CHECK(bmt_trace_dir_write_packet(&d, 1, pkt, sizeof pkt, sizeof pkt, 0) == 0);
            CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, sizeof pkt, sizeof pkt, 0) == 0);
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
    CHECK(bmt_trace_dir_create(&d, path, 0, &info, 0, 0) == -ENOTDIR);
    CHECK(bmt_trace_dir_create(&d, file, 0, &info, 0, 0) == -ENOTDIR);

    /* procfs refuses new directories, also for root. */
    int rc = bmt_trace_dir_create(&d, "/proc/self/bmt-test-trace", 0, &info, 0, 0);
    CHECKF(rc < 0, "creating a trace in /proc returned %d", rc);

    /* Name longer than the directory path buffer. */
    static char longname[5000];
    memset(longname, 'a', sizeof longname - 1);
    longname[0] = '/';
    CHECK(bmt_trace_dir_create(&d, longname, 0, &info, 0, 0) == -ENAMETOOLONG);
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
        CHECK(bmt_trace_dir_create(&d, path, 0, &info, 0, 0) == -EACCES);
        CHECK(open_fd_count() == fds);
        tap_group("faults: a directory with mode 0500 is refused");
    }
}

/* A packet of `events` events (content: `bytes` bytes, at least the header)
 * with a recognisable timestamp. */
static size_t make_full_packet(uint8_t *pkt, size_t bytes, uint64_t ts)
{
    uint8_t uuid[BMT_CTF_UUID_BYTES];
    for (int i = 0; i < BMT_CTF_UUID_BYTES; i++)
        uuid[i] = (uint8_t)(i * 17);
    memset(pkt, 0, bytes);
    bmt_ctf_packet_open(pkt, uuid, 0, ts);
    bmt_ctf_packet_close(pkt, ts + 10, bytes, 999 /* renumbered */, 0);
    return bytes;
}

static off_t file_size(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_size : -1;
}

/* Reads the packets of a stream file: their count, and the last one's
 * packet_seq_num and events_discarded. Returns -1 if the file does not end
 * on a packet boundary (a partial packet). */
static long read_packets(const char *path, uint64_t *last_seq, uint64_t *last_discarded)
{
    static uint8_t buf[1 << 16];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    long count = 0;
    size_t off = 0;
    while (n > 0 && off + BMT_PKT_HEADER_BYTES <= (size_t)n) {
        uint64_t size = bmt_get_u64(buf + off + BMT_PKT_PACKET_SIZE) / 8;
        if (size < BMT_PKT_HEADER_BYTES || off + size > (size_t)n)
            return -1;
        *last_seq = bmt_get_u64(buf + off + BMT_PKT_SEQ_NUM);
        *last_discarded = bmt_get_u64(buf + off + BMT_PKT_EVENTS_DISCARDED);
        off += size;
        count++;
    }
    return off == (size_t)(n < 0 ? 0 : n) ? count : -1;
}

static void test_write_failures(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    static uint8_t pkt[1000];
    int fds = open_fd_count();
    char dir[256], stream[300];
    uint64_t seq = 0, disc = 0;

    /* A short write, then ENOSPC: cut back to the last whole packet. */
    path_of(dir, sizeof dir, "short");
    snprintf(stream, sizeof stream, "%s/channel0_0", dir);
    struct bmt_trace_dir d;
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0);
    for (int i = 0; i < 3; i++)
        CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, make_full_packet(pkt, 1000, 100), 0, 7) == 0);
    disk_full_from(1, 300);
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, make_full_packet(pkt, 1000, 200), 0, 7) == -ENOSPC);
    CHECK(file_size(stream) == 3000);
    CHECK(d.streams[0].lost_events == 7 && d.streams[0].events == 21);
    /* Sticky: later packets are counted, not written. */
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, make_full_packet(pkt, 1000, 300), 0, 5) == -ENOSPC);
    CHECK(d.streams[0].lost_events == 12);
    /* Sealing on a disk with no room at all gives up the last packet. */
    CHECK(bmt_trace_dir_seal_stream(&d, 0, 4, 400) == -ENOSPC);
    disk_ok();
    CHECK(file_size(stream) == 2000);
    CHECK(d.streams[0].events == 14 && d.streams[0].lost_events == 19);
    /* With room again the seal goes where that packet was. */
    CHECK(bmt_trace_dir_seal_stream(&d, 0, 4, 400) == 0);
    CHECK(file_size(stream) == 2000 + BMT_PKT_HEADER_BYTES);
    CHECKF(read_packets(stream, &seq, &disc) == 3 && seq == 2 && disc == 23,
           "packets %ld, last seq %llu discarded %llu", read_packets(stream, &seq, &disc),
           (unsigned long long)seq, (unsigned long long)disc);
    /* Events offered later still reach the count, in place. */
    CHECK(bmt_trace_dir_add_discarded(&d, 0, 5, 500) == 0);
    CHECK(read_packets(stream, &seq, &disc) == 3 && disc == 28);
    CHECK(bmt_trace_dir_close(&d) == -ENOSPC);
    tap_group("faults: a failed write leaves whole packets only; losses counted and sealed");

    /* The seal fits after the last packet when there is room for it. */
    path_of(dir, sizeof dir, "seal-room");
    snprintf(stream, sizeof stream, "%s/channel0_2", dir);
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0);
    CHECK(bmt_trace_dir_write_packet(&d, 2, pkt, make_full_packet(pkt, 500, 100), 0, 3) == 0);
    CHECK(bmt_trace_dir_seal_stream(&d, 2, 9, 300) == 0);
    CHECK(read_packets(stream, &seq, &disc) == 2 && seq == 1 && disc == 9);
    /* Nothing lost: no seal. A stream with only losses gets a file. */
    CHECK(bmt_trace_dir_seal_stream(&d, 2, 9, 400) == 0);
    CHECK(file_size(stream) == 500 + BMT_PKT_HEADER_BYTES);
    CHECK(bmt_trace_dir_seal_stream(&d, 5, 2, 400) == 0);
    snprintf(stream, sizeof stream, "%s/channel0_5", dir);
    CHECK(read_packets(stream, &seq, &disc) == 1 && seq == 0 && disc == 2);
    CHECK(bmt_trace_dir_close(&d) == 0);
    CHECK(open_fd_count() == fds);
    tap_group("faults: the final packet carries each stream's loss count, sequence unbroken");
}

/* Packets from page-aligned memory with room to spare go out as whole
 * zero-padded 4 KiB blocks (O_DIRECT), packet_size counting the padding; a
 * filesystem that opens O_DIRECT but refuses the write (EINVAL) gets that
 * packet and the rest of the file buffered, nothing lost. */
static void test_direct(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    uint8_t *mem = aligned_alloc(BMT_DIRECT_BLOCK, 2 * BMT_DIRECT_BLOCK);
    char dir[256], stream[300];
    uint64_t seq = 0, disc = 0;
    path_of(dir, sizeof dir, "direct");
    snprintf(stream, sizeof stream, "%s/channel0_0", dir);
    struct bmt_trace_dir d;
    CHECK(mem && bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0);
    size_t bytes = make_full_packet(mem, 1000, 100);
    CHECK(bmt_trace_dir_write_packet(&d, 0, mem, bytes, 2 * BMT_DIRECT_BLOCK, 3) == 0);
    if (d.no_direct) {
        printf("# %s refuses O_DIRECT (tmpfs?): only the buffered path ran\n", base);
        CHECK(file_size(stream) == 1000);
    } else {
        CHECKF(file_size(stream) == BMT_DIRECT_BLOCK, "direct packet: file %ld bytes",
               (long)file_size(stream));
        CHECK(d.streams[0].direct == 1);
        /* The padding is zeros, and the packet says it is there. */
        uint8_t back[BMT_DIRECT_BLOCK];
        int fd = open(stream, O_RDONLY);
        CHECK(fd >= 0 && read(fd, back, sizeof back) == (ssize_t)sizeof back);
        close(fd);
        CHECK(bmt_get_u64(back + BMT_PKT_PACKET_SIZE) == 8u * BMT_DIRECT_BLOCK);
        CHECK(bmt_get_u64(back + BMT_PKT_CONTENT_SIZE) == 8u * 1000);
        int zeros = 1;
        for (size_t i = 1000; i < sizeof back; i++)
            zeros &= back[i] == 0;
        CHECK(zeros);
        /* EINVAL from an O_DIRECT write: that packet goes buffered. */
        write_einval_next = 1;
        bytes = make_full_packet(mem, 1000, 200);
        CHECK(bmt_trace_dir_write_packet(&d, 0, mem, bytes, 2 * BMT_DIRECT_BLOCK, 3) == 0);
        CHECK(write_einval_next == 0 && d.streams[0].direct == 0);
        CHECK(file_size(stream) == BMT_DIRECT_BLOCK + 1000);
    }
    /* Unaligned memory, or no room for padding: buffered, as it is. */
    bytes = make_full_packet(mem + 8, 500, 300);
    CHECK(bmt_trace_dir_write_packet(&d, 0, mem + 8, bytes, 2 * BMT_DIRECT_BLOCK, 2) == 0);
    CHECK(bmt_trace_dir_seal_stream(&d, 0, 0, 400) == 0);
    bmt_trace_dir_close(&d);
    long packets = read_packets(stream, &seq, &disc);
    CHECKF(packets == (d.no_direct ? 2 : 3) && disc == 0, "packets %ld", packets);
    CHECK(d.streams[0].events == (d.no_direct ? 5u : 8u));
    free(mem);
    tap_group("faults: O_DIRECT packets are whole zero-padded blocks; EINVAL falls back to buffered");
}

static void test_rotation(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    static uint8_t pkt[1000];
    char dir[256], name[300];
    uint64_t seq = 0, disc = 0;
    path_of(dir, sizeof dir, "rotate");
    struct bmt_trace_dir d;
    /* Files of at most 2500 bytes (two packets), the newest 3 kept. */
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 2500, 3) == 0);
    for (int i = 0; i < 11; i++)
        CHECK(bmt_trace_dir_write_packet(&d, 1, pkt, make_full_packet(pkt, 1000, 100 + (uint64_t)i),
                                                   0, 1) == 0);
    /* 11 packets, 2 per file: files 0..5, the newest 3 (3, 4, 5) left. */
    for (int k = 0; k <= 5; k++) {
        snprintf(name, sizeof name, "%s/channel0_1_%d", dir, k);
        CHECKF((k >= 3) == (file_size(name) > 0), "file %s: size %ld", name, (long)file_size(name));
    }
    snprintf(name, sizeof name, "%s/channel0_1_5", dir);
    CHECK(read_packets(name, &seq, &disc) == 1 && seq == 10);
    /* On disk: the metadata and the 5 packets of the 3 kept files. */
    CHECK(d.bytes_on_disk == d.bytes_written - 6000);
    CHECK(bmt_trace_dir_close(&d) == 0);
    tap_group("faults: rotation keeps the newest tracefile_count files of tracefile_size");
}

static void test_private(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    static uint8_t pkt[200];
    char dir[256], file[600], target[256];
    struct stat st;
    int fds = open_fd_count();

    /* Private whatever the umask; widened only on request. */
    mode_t old = umask(0);
    path_of(dir, sizeof dir, "private/a/trace");
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0);
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, make_full_packet(pkt, 200, 1), 0, 1) == 0);
    CHECK(bmt_trace_dir_close(&d) == 0);
    umask(old);
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    snprintf(file, sizeof file, "%s/metadata", dir);
    CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);
    snprintf(file, sizeof file, "%s/channel0_0", dir);
    CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);
    path_of(dir, sizeof dir, "private/a");
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700); /* parents we made too */
    path_of(dir, sizeof dir, "widened");
    CHECK(bmt_trace_dir_create(&d, dir, 0640, &info, 0, 0) == 0);
    CHECK(bmt_trace_dir_close(&d) == 0);
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0750);
    snprintf(file, sizeof file, "%s/metadata", dir);
    CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0640);
    tap_group("faults: directory 0700 and files 0600 under any umask; file_mode widens on purpose");

    /* A directory that is a symlink: refused, its target untouched. */
    path_of(target, sizeof target, "link-target");
    CHECK(mkdir(target, 0755) == 0);
    path_of(dir, sizeof dir, "link-dir");
    CHECK(symlink(target, dir) == 0);
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == -ELOOP);
    snprintf(file, sizeof file, "%s/metadata", target);
    CHECK(!exists(file) && exists(dir));
    CHECK(stat(target, &st) == 0 && (st.st_mode & 0777) == 0755);

    /* A stream file planted as a symlink: the open fails, the target is not
     * written, the packet's events are counted as lost. */
    path_of(dir, sizeof dir, "planted");
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0);
    path_of(target, sizeof target, "victim");
    FILE *f = fopen(target, "w");
    CHECK(f && fputs("precious", f) >= 0 && fclose(f) == 0);
    snprintf(file, sizeof file, "%s/channel0_0", dir);
    CHECK(symlink(target, file) == 0);
    CHECK(bmt_trace_dir_write_packet(&d, 0, pkt, make_full_packet(pkt, 200, 1), 0, 4) == -EEXIST);
    CHECK(d.streams[0].lost_events == 4);
    CHECK(file_size(target) == 8);
    CHECK(bmt_trace_dir_close(&d) == -EEXIST);
    tap_group("faults: a symlinked directory or a planted stream symlink is refused, target untouched");

    /* A directory holding anything, or owned by someone else: refused. */
    path_of(dir, sizeof dir, "full-dir");
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(file, sizeof file, "%s/something", dir);
    f = fopen(file, "w");
    CHECK(f && fclose(f) == 0);
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == -ENOTEMPTY);
    CHECK(!exists(file) == 0);
    path_of(dir, sizeof dir, "empty-dir");
    CHECK(mkdir(dir, 0777) == 0);
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0); /* ours and empty: taken */
    CHECK(bmt_trace_dir_close(&d) == 0);
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    if (geteuid() == 0) {
        path_of(dir, sizeof dir, "not-ours");
        CHECK(mkdir(dir, 0777) == 0 && chown(dir, 65534, 65534) == 0);
        CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == -EPERM);
    }
    /* And a trace just written cannot be overwritten by a second create. */
    path_of(dir, sizeof dir, "twice/nested/trace");
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0);
    CHECK(bmt_trace_dir_close(&d) == 0);
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == -ENOTEMPTY);
    CHECK(bmt_trace_dir_create(&d, "relative/path", 0, &info, 0, 0) == -EINVAL);
    CHECK(open_fd_count() == fds);
    tap_group("faults: a directory holding anything, someone else's, or relative is refused");
}

static void test_removed(void)
{
    struct bmt_ctf_trace_info info;
    fixed_info(&info);
    struct bmt_trace_dir d;
    char dir[256], cmd[600];
    path_of(dir, sizeof dir, "removed");
    CHECK(bmt_trace_dir_create(&d, dir, 0, &info, 0, 0) == 0);
    CHECK(!bmt_trace_dir_removed(&d));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    CHECK(bmt_trace_dir_removed(&d));
    CHECK(bmt_trace_dir_close(&d) == 0);
    tap_group("faults: a trace directory removed behind the writer's back is noticed");
}

int main(void)
{
    if (!mkdtemp(base)) {
        printf("not ok - faults: mkdtemp failed\n");
        return 1;
    }
    test_alloc_failures();
    test_unwritable();
    test_write_failures();
    test_direct();
    test_rotation();
    test_private();
    test_removed();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", base, base);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", base);
    return tap_exit();
}
