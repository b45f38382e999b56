/* Trace directory writer (contract in trace_dir.h). */
#define _GNU_SOURCE /* O_DIRECTORY, O_NOFOLLOW, openat */
#include "trace_dir.h"
#include "event.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Writes all of `buf` at offset `off`. Returns 0 or a negative errno; a
 * write that makes no progress is -ENOSPC (what a full disk gives once part
 * of a buffer went in). */
static int pwrite_all(int fd, const void *buf, size_t bytes, uint64_t off)
{
    const uint8_t *p = buf;
    while (bytes > 0) {
        ssize_t n = pwrite(fd, p, bytes, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -ENOSPC;
        p += n;
        off += (uint64_t)n;
        bytes -= (size_t)n;
    }
    return 0;
}

/* The directory's mode for files of mode `file_mode`: x wherever r. */
static mode_t dir_mode(unsigned file_mode)
{
    mode_t m = (mode_t)(file_mode & 0777) | S_IRWXU;
    if (m & S_IRGRP)
        m |= S_IXGRP;
    if (m & S_IROTH)
        m |= S_IXOTH;
    return m;
}

/* mkdir -p of every parent of `path` (not `path` itself). */
static int make_parents(const char *path, mode_t mode)
{
    char tmp[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp)
        return -ENAMETOOLONG;
    memcpy(tmp, path, len + 1);
    char *last = strrchr(tmp, '/');
    if (!last || last == tmp)
        return 0;
    *last = '\0';
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, mode) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* 1 when the directory open at `fd` holds nothing but . and .. */
static int dir_is_empty(int fd)
{
    int dup_fd = dup(fd);
    if (dup_fd < 0)
        return 0;
    DIR *dir = fdopendir(dup_fd);
    if (!dir) {
        close(dup_fd);
        return 0;
    }
    int empty = 1;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            empty = 0;
            break;
        }
    }
    closedir(dir);
    return empty;
}

/* Makes (or takes, if empty and ours) the directory and opens it. */
static int open_dir(struct bmt_trace_dir *d, mode_t mode)
{
    int rc = make_parents(d->path, mode);
    if (rc < 0)
        return rc;
    struct stat st;
    if (mkdir(d->path, mode) == 0) {
        d->created = 1;
    } else if (errno != EEXIST) {
        return -errno;
    } else if (lstat(d->path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        /* A symlink (to anything) is never followed; a file is not a
         * directory. */
        return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
    }
    /* O_NOFOLLOW again: a symlink swapped in since lstat fails here. */
    d->dirfd = open(d->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d->dirfd < 0) {
        rc = -errno;
        goto fail;
    }
    if (fstat(d->dirfd, &st) != 0) {
        rc = -errno;
        goto fail;
    }
    if (!d->created) {
        if (st.st_uid != geteuid()) {
            rc = -EPERM;
            goto fail;
        }
        if (!dir_is_empty(d->dirfd)) {
            rc = -ENOTEMPTY;
            goto fail;
        }
    }
    /* The umask may have narrowed mkdir's mode, or the directory existed
     * with another: set exactly what was asked. */
    if (fchmod(d->dirfd, mode) != 0) {
        rc = -errno;
        goto fail;
    }
    return 0;
fail:
    if (d->dirfd >= 0)
        close(d->dirfd);
    d->dirfd = -1;
    if (d->created)
        rmdir(d->path);
    d->created = 0;
    return rc;
}

/* Creates `name` in the directory: never an existing file, never through a
 * symlink, exactly the trace's mode; `flags` adds O_DIRECT. Returns the
 * descriptor or -errno. */
static int create_file_flags(struct bmt_trace_dir *d, const char *name, int flags)
{
    int fd = openat(d->dirfd, name,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | flags,
                    (mode_t)d->file_mode);
    if (fd < 0)
        return -errno;
    if (fchmod(fd, (mode_t)d->file_mode) != 0) {
        int rc = -errno;
        close(fd);
        unlinkat(d->dirfd, name, 0);
        return rc;
    }
    return fd;
}

static int create_file(struct bmt_trace_dir *d, const char *name)
{
    return create_file_flags(d, name, 0);
}

/* BMT_DIRECT_IO=0 builds the buffered writer only: bench/consumer_cpu.c is
 * built both ways so `make bench` shows the two side by side. */
#ifndef BMT_DIRECT_IO
#define BMT_DIRECT_IO 1
#endif

/* Stream files take O_DIRECT where the filesystem does (not tmpfs: EINVAL,
 * then buffered from there on for the whole directory). */
static int create_stream_file(struct bmt_trace_dir *d, const char *name, int *direct)
{
    if (BMT_DIRECT_IO && !d->no_direct) {
        int fd = create_file_flags(d, name, O_DIRECT);
        if (fd >= 0) {
            *direct = 1;
            return fd;
        }
        if (fd != -EINVAL)
            return fd;
        d->no_direct = 1;
    }
    *direct = 0;
    return create_file(d, name);
}

/* Stops O_DIRECT on stream `s`'s file: for writes that are not whole
 * aligned blocks (the final count packet, a count patched in place); every
 * later write of that file is buffered. */
static int stop_direct(struct bmt_stream_file *s)
{
    if (!s->direct)
        return 0;
    int flags = fcntl(s->fd, F_GETFL);
    if (flags < 0 || fcntl(s->fd, F_SETFL, flags & ~O_DIRECT) != 0)
        return -errno;
    s->direct = 0;
    return 0;
}

/* The incomplete marker: two header-only packets, the first with nothing
 * discarded, the second with `events`, so that babeltrace2 reports the
 * count (it reports a first packet's count only as "may have discarded"). */
static int write_incomplete(struct bmt_trace_dir *d, uint64_t events, uint64_t ts_ns)
{
    uint8_t pkt[2 * BMT_PKT_HEADER_BYTES];
    uint64_t begin = d->incomplete_begin_ns, end = ts_ns > begin ? ts_ns : begin;
    bmt_ctf_packet_open(pkt, d->uuid, BMT_INCOMPLETE_STREAM, begin);
    bmt_ctf_packet_close(pkt, begin, BMT_PKT_HEADER_BYTES, 0, 0);
    bmt_ctf_packet_open(pkt + BMT_PKT_HEADER_BYTES, d->uuid, BMT_INCOMPLETE_STREAM, begin);
    bmt_ctf_packet_close(pkt + BMT_PKT_HEADER_BYTES, end, BMT_PKT_HEADER_BYTES, 1, events);
    int rc = pwrite_all(d->incomplete_fd, pkt, sizeof pkt, 0);
    if (rc == 0)
        d->incomplete_events = events;
    return rc;
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int open_incomplete(struct bmt_trace_dir *d)
{
    int fd = create_file(d, BMT_INCOMPLETE_FILE);
    if (fd < 0)
        return fd;
    d->incomplete_fd = fd;
    d->incomplete_begin_ns = monotonic_ns();
    /* Not in bytes_on_disk: it is gone once the trace is complete. */
    return write_incomplete(d, 0, d->incomplete_begin_ns);
}

int bmt_trace_dir_set_unwritten(struct bmt_trace_dir *d, uint64_t events, uint64_t ts_ns)
{
    if (d->incomplete_fd < 0 || events == d->incomplete_events)
        return 0;
    return write_incomplete(d, events, ts_ns);
}

void bmt_trace_dir_mark_complete(struct bmt_trace_dir *d)
{
    if (d->incomplete_fd < 0)
        return;
    close(d->incomplete_fd);
    d->incomplete_fd = -1;
    if (d->dirfd >= 0)
        unlinkat(d->dirfd, BMT_INCOMPLETE_FILE, 0);
}

int bmt_trace_dir_create(struct bmt_trace_dir *d, const char *path, unsigned file_mode,
                         const struct bmt_ctf_trace_info *info, uint64_t tracefile_size_bytes,
                         uint32_t tracefile_count)
{
    memset(d, 0, sizeof *d);
    d->dirfd = -1;
    d->incomplete_fd = -1;
    for (int i = 0; i < BMT_MAX_STREAMS; i++)
        d->streams[i].fd = -1;
    if (path[0] == '\0') {
        d->no_files = 1;
        memcpy(d->uuid, info->uuid, sizeof d->uuid);
        return 0;
    }
    if (path[0] != '/' || tracefile_count > 1024)
        return -EINVAL;
    if (strlen(path) + 32 >= sizeof d->path)
        return -ENAMETOOLONG;
    strcpy(d->path, path);
    /* "dir/" names the same directory as "dir"; without the slash the
     * parent is what make_parents sees. */
    for (size_t n = strlen(d->path); n > 1 && d->path[n - 1] == '/'; n--)
        d->path[n - 1] = '\0';
    d->file_mode = file_mode ? file_mode & 0777 : BMT_TRACE_FILE_MODE;
    d->tracefile_size_bytes = tracefile_size_bytes;
    d->tracefile_count = tracefile_count;
    memcpy(d->uuid, info->uuid, sizeof d->uuid);

    int rc = open_dir(d, dir_mode(d->file_mode));
    if (rc < 0)
        return rc;
    /* The incomplete marker before the metadata: a reader that finds the
     * metadata and then no marker knows the trace is complete (a flight
     * capture is listed once sealed). With the metadata first, a capture
     * looked sealed for as long as the metadata's fsync took. */
    char *text = NULL;
    rc = open_incomplete(d);
    if (rc < 0)
        goto fail;

    size_t size = 64 * 1024;
    text = malloc(size);
    long len = text ? bmt_ctf_metadata(info, text, size) : -ENOMEM;
    if (len < 0) {
        rc = (int)len;
        goto fail;
    }
    int fd = create_file(d, "metadata");
    if (fd < 0) {
        rc = fd;
        goto fail;
    }
    rc = pwrite_all(fd, text, (size_t)len, 0);
    if (rc == 0 && fsync(fd) != 0 && errno != EINVAL)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc < 0)
        goto fail;
    free(text);
    d->bytes_on_disk = d->bytes_written = (uint64_t)len;
    return 0;
fail:
    free(text);
    bmt_trace_dir_abandon(d);
    return rc;
}

static void stream_file_name(const struct bmt_trace_dir *d, unsigned stream, uint32_t index,
                             char *out, size_t size)
{
    if (d->tracefile_size_bytes)
        snprintf(out, size, "channel0_%u_%u", stream, index);
    else
        snprintf(out, size, "channel0_%u", stream);
}

/* Opens the next file of stream `s` (the first, or the next one when
 * rotating), deleting the file that falls out of the kept window. */
static int open_stream_file(struct bmt_trace_dir *d, unsigned stream, struct bmt_stream_file *s)
{
    char name[64];
    if (s->fd >= 0) {
        if (close(s->fd) != 0) {
            s->fd = -1;
            return -errno;
        }
        s->fd = -1;
        s->file_index++;
    }
    if (d->tracefile_count && !s->file_events) {
        /* Allocated once per rotating stream, by the consumer (never on a
         * writer's path). */
        s->file_events = calloc(d->tracefile_count, sizeof *s->file_events);
        if (!s->file_events)
            return -ENOMEM;
    }
    if (d->tracefile_count && s->file_index >= d->tracefile_count) {
        /* The file leaving the window takes its events with it: they count
         * as lost (overwritten, as a flight recorder's are). */
        struct stat st;
        uint64_t *gone = &s->file_events[s->file_index % d->tracefile_count];
        stream_file_name(d, stream, s->file_index - d->tracefile_count, name, sizeof name);
        if (fstatat(d->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            unlinkat(d->dirfd, name, 0) == 0) {
            if ((uint64_t)st.st_size <= d->bytes_on_disk)
                d->bytes_on_disk -= (uint64_t)st.st_size;
            s->events -= *gone;
            s->lost_events += *gone;
            s->rotated_events += *gone;
        }
        *gone = 0;
    }
    stream_file_name(d, stream, s->file_index, name, sizeof name);
    int fd = create_stream_file(d, name, &s->direct);
    if (fd < 0)
        return fd;
    s->fd = fd;
    s->file_bytes = 0;
    s->last_packet_offset = 0;
    s->last_packet_events = 0;
    s->tail_offset = 0;
    return 0;
}

static size_t padded_to_block(size_t bytes)
{
    return (bytes + BMT_DIRECT_BLOCK - 1) & ~(size_t)(BMT_DIRECT_BLOCK - 1);
}

/* Whether packet `pkt` can go straight to the device as whole zero-padded
 * blocks: an O_DIRECT file (or one not open yet) ending on a block, and
 * page-aligned packet memory with room for the padding. */
static int direct_fits(const struct bmt_stream_file *s, const uint8_t *pkt, size_t content_bytes,
                       size_t capacity_bytes)
{
    return (s->fd < 0 || s->direct) && (uintptr_t)pkt % BMT_DIRECT_BLOCK == 0 &&
           padded_to_block(content_bytes) <= capacity_bytes &&
           s->file_bytes % BMT_DIRECT_BLOCK == 0;
}

size_t bmt_trace_dir_packet_bytes(const struct bmt_trace_dir *d, unsigned stream,
                                  const uint8_t *pkt, size_t content_bytes, size_t capacity_bytes)
{
    if (stream >= BMT_MAX_STREAMS || d->no_direct || d->no_files ||
        !direct_fits(&d->streams[stream], pkt, content_bytes, capacity_bytes))
        return content_bytes;
    return padded_to_block(content_bytes);
}

/* Writes packet `pkt` at the end of stream `s`'s file and says in
 * `*bytes` how long it is there. Whole zero-padded blocks go straight to
 * the device (packet_size counts the padding, which readers skip);
 * anything else is written as it is, buffered. A filesystem that opened
 * O_DIRECT but refuses the write (EINVAL) gets it buffered. */
static int write_stream_packet(struct bmt_stream_file *s, uint8_t *pkt, size_t content_bytes,
                               size_t capacity_bytes, size_t *bytes)
{
    size_t padded = padded_to_block(content_bytes);
    int rc = 0;
    if (s->direct && !direct_fits(s, pkt, content_bytes, capacity_bytes))
        rc = stop_direct(s);
    if (rc == 0 && s->direct) {
        memset(pkt + content_bytes, 0, padded - content_bytes);
        bmt_put_u64(pkt + BMT_PKT_PACKET_SIZE, (uint64_t)padded * 8u);
        rc = pwrite_all(s->fd, pkt, padded, s->file_bytes);
        if (rc == 0) {
            *bytes = padded;
            return 0;
        }
        if (rc != -EINVAL)
            return rc;
        rc = stop_direct(s);
        if (rc == 0 && ftruncate(s->fd, (off_t)s->file_bytes) != 0)
            rc = -errno;
    }
    if (rc < 0)
        return rc;
    bmt_put_u64(pkt + BMT_PKT_PACKET_SIZE, (uint64_t)content_bytes * 8u);
    *bytes = content_bytes;
    return pwrite_all(s->fd, pkt, content_bytes, s->file_bytes);
}

int bmt_trace_dir_write_packet(struct bmt_trace_dir *d, unsigned stream, uint8_t *pkt,
                               size_t content_bytes, size_t capacity_bytes, uint32_t events)
{
    if (stream >= BMT_MAX_STREAMS)
        return -EINVAL;
    struct bmt_stream_file *s = &d->streams[stream];
    if (d->error) {
        s->lost_events += events;
        return -d->error;
    }
    if (d->no_files) {
        s->events += events;
        s->next_seq++;
        s->stamped_discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED) + s->lost_events;
        s->last_ts_end_ns = bmt_get_u64(pkt + BMT_PKT_TS_END);
        d->bytes_on_disk += content_bytes;
        d->bytes_written += content_bytes;
        return 0;
    }
    int rc = 0;
    if (s->fd < 0 || (d->tracefile_size_bytes && s->file_bytes > 0 &&
                      s->file_bytes + bmt_trace_dir_packet_bytes(d, stream, pkt, content_bytes,
                                                                capacity_bytes) >
                          d->tracefile_size_bytes))
        rc = open_stream_file(d, stream, s);
    uint64_t discarded = bmt_get_u64(pkt + BMT_PKT_EVENTS_DISCARDED) + s->lost_events;
    size_t bytes = content_bytes;
    if (rc == 0) {
        bmt_put_u64(pkt + BMT_PKT_SEQ_NUM, s->next_seq);
        bmt_put_u64(pkt + BMT_PKT_EVENTS_DISCARDED, discarded);
        rc = write_stream_packet(s, pkt, content_bytes, capacity_bytes, &bytes);
    }
    if (rc < 0) {
        /* Whole packets only: cut what part of this one went in. */
        if (s->fd >= 0 && ftruncate(s->fd, (off_t)s->file_bytes) != 0) {
        }
        s->lost_events += events;
        d->error = -rc;
        return rc;
    }
    s->last_packet_offset = s->tail_offset = s->file_bytes;
    s->last_packet_events = events;
    s->events += events;
    if (s->file_events)
        s->file_events[s->file_index % d->tracefile_count] += events;
    s->file_bytes += bytes;
    s->next_seq++;
    s->stamped_discarded = discarded;
    s->last_ts_end_ns = bmt_get_u64(pkt + BMT_PKT_TS_END);
    d->bytes_on_disk += bytes;
    d->bytes_written += bytes;
    return 0;
}

void bmt_trace_dir_skip_packets(struct bmt_trace_dir *d, unsigned stream, uint64_t packets)
{
    if (stream < BMT_MAX_STREAMS)
        d->streams[stream].next_seq += packets;
}

void bmt_trace_dir_lose(struct bmt_trace_dir *d, unsigned stream, uint64_t events)
{
    if (stream < BMT_MAX_STREAMS)
        d->streams[stream].lost_events += events;
}

int bmt_trace_dir_seal_stream(struct bmt_trace_dir *d, unsigned stream, uint64_t ring_discarded,
                              uint64_t ts_ns)
{
    if (stream >= BMT_MAX_STREAMS)
        return -EINVAL;
    struct bmt_stream_file *s = &d->streams[stream];
    if (ring_discarded + s->lost_events == s->stamped_discarded)
        return 0;
    if (d->no_files) {
        s->stamped_discarded = ring_discarded + s->lost_events;
        return 0;
    }
    if (s->fd < 0) {
        int rc = open_stream_file(d, stream, s);
        if (rc < 0)
            return rc;
    }
    int rc0 = stop_direct(s);
    if (rc0 < 0)
        return rc0;
    uint8_t pkt[BMT_PKT_HEADER_BYTES];
    for (int attempt = 0; attempt < 2; attempt++) {
        uint64_t discarded = ring_discarded + s->lost_events;
        uint64_t ts = ts_ns > s->last_ts_end_ns ? ts_ns : s->last_ts_end_ns;
        bmt_ctf_packet_open(pkt, d->uuid, stream, ts);
        bmt_ctf_packet_close(pkt, ts, sizeof pkt, s->next_seq, discarded);
        int rc = pwrite_all(s->fd, pkt, sizeof pkt, s->file_bytes);
        if (rc == 0) {
            s->tail_offset = s->file_bytes;
            s->file_bytes += sizeof pkt;
            s->next_seq++;
            s->stamped_discarded = discarded;
            s->last_packet_events = 0;
            d->bytes_on_disk += sizeof pkt;
            d->bytes_written += sizeof pkt;
            return 0;
        }
        if (ftruncate(s->fd, (off_t)s->file_bytes) != 0) {
        }
        if (!d->error)
            d->error = -rc;
        /* No room even for a header: give up the last packet (its events
         * are counted) and put the header where it was. */
        if (s->last_packet_events == 0 || ftruncate(s->fd, (off_t)s->last_packet_offset) != 0)
            return rc;
        d->bytes_on_disk -= s->file_bytes - s->last_packet_offset;
        s->file_bytes = s->last_packet_offset;
        s->events -= s->last_packet_events;
        if (s->file_events)
            s->file_events[s->file_index % d->tracefile_count] -= s->last_packet_events;
        s->lost_events += s->last_packet_events;
        s->last_packet_events = 0;
        s->next_seq--;
    }
    return -ENOSPC;
}

int bmt_trace_dir_end_stream(struct bmt_trace_dir *d, unsigned stream, uint64_t ts_ns)
{
    if (stream >= BMT_MAX_STREAMS || d->streams[stream].fd < 0)
        return -EINVAL;
    struct bmt_stream_file *s = &d->streams[stream];
    if (ts_ns <= s->last_ts_end_ns)
        return 0;
    int rc = stop_direct(s);
    if (rc < 0)
        return rc;
    uint8_t pkt[BMT_PKT_HEADER_BYTES];
    bmt_ctf_packet_open(pkt, d->uuid, stream, ts_ns);
    bmt_ctf_packet_close(pkt, ts_ns, sizeof pkt, s->next_seq, s->stamped_discarded);
    rc = pwrite_all(s->fd, pkt, sizeof pkt, s->file_bytes);
    if (rc < 0) {
        if (ftruncate(s->fd, (off_t)s->file_bytes) != 0) {
        }
        return rc;
    }
    s->tail_offset = s->file_bytes;
    s->file_bytes += sizeof pkt;
    s->next_seq++;
    s->last_packet_events = 0;
    s->last_ts_end_ns = ts_ns;
    d->bytes_on_disk += sizeof pkt;
    d->bytes_written += sizeof pkt;
    return 0;
}

int bmt_trace_dir_add_discarded(struct bmt_trace_dir *d, unsigned stream, uint64_t events,
                                uint64_t ts_ns)
{
    if (stream >= BMT_MAX_STREAMS)
        return -EINVAL;
    struct bmt_stream_file *s = &d->streams[stream];
    if (events == 0 || d->no_files)
        return 0;
    if (s->fd < 0 || s->file_bytes == 0)
        return bmt_trace_dir_seal_stream(d, stream, s->stamped_discarded + events - s->lost_events,
                                         ts_ns);
    int rc0 = stop_direct(s);
    if (rc0 < 0)
        return rc0;
    uint8_t field[8];
    bmt_put_u64(field, s->stamped_discarded + events);
    int rc = pwrite_all(s->fd, field, sizeof field, s->tail_offset + BMT_PKT_EVENTS_DISCARDED);
    if (rc == 0)
        s->stamped_discarded += events;
    return rc;
}

int bmt_trace_dir_removed(const struct bmt_trace_dir *d)
{
    struct stat st;
    if (d->dirfd < 0)
        return 0;
    return fstat(d->dirfd, &st) == 0 && st.st_nlink == 0;
}

int bmt_trace_dir_close(struct bmt_trace_dir *d)
{
    bmt_trace_dir_mark_complete(d);
    for (int i = 0; i < BMT_MAX_STREAMS; i++) {
        free(d->streams[i].file_events);
        d->streams[i].file_events = NULL;
        if (d->streams[i].fd < 0)
            continue;
        if (close(d->streams[i].fd) != 0 && !d->error)
            d->error = errno;
        d->streams[i].fd = -1;
    }
    if (d->dirfd >= 0)
        close(d->dirfd);
    d->dirfd = -1;
    return -d->error;
}

void bmt_trace_dir_abandon(struct bmt_trace_dir *d)
{
    if (d->dirfd >= 0)
        unlinkat(d->dirfd, "metadata", 0);
    /* close removes the incomplete marker. */
    bmt_trace_dir_close(d);
    if (d->created)
        rmdir(d->path);
    d->created = 0;
}

int bmt_ctf_trace_info_init(struct bmt_ctf_trace_info *info)
{
    memset(info, 0, sizeof *info);
    if (getrandom(info->uuid, sizeof info->uuid, 0) != (ssize_t)sizeof info->uuid)
        return -EIO;
    info->uuid[6] = (uint8_t)((info->uuid[6] & 0x0f) | 0x40); /* version 4 */
    info->uuid[8] = (uint8_t)((info->uuid[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    if (gethostname(info->hostname, sizeof info->hostname - 1) != 0)
        strcpy(info->hostname, "localhost");

    /* Offset of the monotonic clock from the epoch: sample realtime between
     * two monotonic reads and keep the middle, to halve the error. */
    struct timespec m1, rt, m2;
    clock_gettime(CLOCK_MONOTONIC, &m1);
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &m2);
    int64_t mono = ((int64_t)m1.tv_sec * 1000000000 + m1.tv_nsec +
                    (int64_t)m2.tv_sec * 1000000000 + m2.tv_nsec) / 2;
    int64_t real = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
    int64_t off = real - mono;
    info->clock_offset_s = off / 1000000000;
    info->clock_offset_ns = off % 1000000000;
    if (info->clock_offset_ns < 0) {
        info->clock_offset_ns += 1000000000;
        info->clock_offset_s -= 1;
    }

    info->vpid = (int64_t)getpid();
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (fgets(info->procname, sizeof info->procname, f))
            info->procname[strcspn(info->procname, "\n")] = '\0';
        fclose(f);
    }
    return 0;
}
