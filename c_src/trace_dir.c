/* Trace directory writer (contract in trace_dir.h). */
#include "trace_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t bmt_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int write_all(int fd, const void *buf, size_t bytes)
{
    const uint8_t *p = buf;
    while (bytes > 0) {
        ssize_t n = write(fd, p, bytes);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

/* mkdir -p: creates each missing component of `path`. */
static int make_dirs(const char *path)
{
    char tmp[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof tmp)
        return -ENAMETOOLONG;
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -errno;
    struct stat st;
    if (stat(tmp, &st) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    return 0;
}

int bmt_trace_dir_create(struct bmt_trace_dir *d, const char *path,
                         const struct bmt_ctf_trace_info *info)
{
    memset(d, 0, sizeof *d);
    for (int i = 0; i < BMT_MAX_STREAMS; i++)
        d->fds[i] = -1;
    if (strlen(path) + 32 >= sizeof d->path)
        return -ENAMETOOLONG;
    strcpy(d->path, path);

    int rc = make_dirs(path);
    if (rc < 0)
        return rc;

    size_t size = 64 * 1024;
    char *text = malloc(size);
    if (!text)
        return -ENOMEM;
    long len = bmt_ctf_metadata(info, text, size);
    if (len < 0) {
        free(text);
        return (int)len;
    }
    char file[4200];
    snprintf(file, sizeof file, "%s/metadata", path);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = -errno;
        free(text);
        return rc;
    }
    rc = write_all(fd, text, (size_t)len);
    if (rc == 0 && fsync(fd) != 0 && errno != EINVAL)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    free(text);
    if (rc < 0)
        unlink(file);
    return rc;
}

int bmt_trace_dir_write_packet(struct bmt_trace_dir *d, unsigned stream, const uint8_t *pkt,
                               size_t bytes)
{
    if (d->error)
        return -d->error;
    if (stream >= BMT_MAX_STREAMS)
        return -EINVAL;
    if (d->fds[stream] < 0) {
        char file[4200];
        snprintf(file, sizeof file, "%s/channel0_%u", d->path, stream);
        int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            d->error = errno;
            return -d->error;
        }
        d->fds[stream] = fd;
    }
    int rc = write_all(d->fds[stream], pkt, bytes);
    if (rc < 0) {
        d->error = -rc;
        return rc;
    }
    d->bytes_written += bytes;
    return 0;
}

int bmt_trace_dir_close(struct bmt_trace_dir *d)
{
    for (int i = 0; i < BMT_MAX_STREAMS; i++) {
        if (d->fds[i] < 0)
            continue;
        if (close(d->fds[i]) != 0 && !d->error)
            d->error = errno;
        d->fds[i] = -1;
    }
    return -d->error;
}

void bmt_trace_dir_abandon(struct bmt_trace_dir *d)
{
    char file[4200];
    bmt_trace_dir_close(d);
    snprintf(file, sizeof file, "%s/metadata", d->path);
    unlink(file);
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
