/* Trace directory reader (contract in reader.h).
 *
 * Bounds discipline: every offset is compared against the mapping size or
 * the current packet's content end before the bytes are loaded, and sizes
 * read from the file are compared in their own units before any addition,
 * so a hostile 64-bit size cannot overflow an offset.
 */
#define _GNU_SOURCE /* strverscmp */
#include "reader.h"
#include "catalogue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define METADATA_MAX_BYTES (64u << 20)

static int fail(struct bmt_reader *r, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct bmt_reader *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    return rc;
}

static const char TRUNCATED_FIX[] =
    "the file is truncated or corrupt (was the recording cut short?): copy the trace "
    "again, or move the damaged stream file out of the directory to read the rest";

static int read_metadata(struct bmt_reader *r)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/metadata", r->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return fail(r, -ENOENT, "no metadata file; this is not a trace directory: pass a "
                                    "directory written by beamtrace (it holds `metadata` and "
                                    "channel0_* files)");
        return fail(r, -e, "cannot open metadata: %s; check the directory's permissions",
                    strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > METADATA_MAX_BYTES) {
        close(fd);
        return fail(r, -EINVAL, "metadata is not a regular file of at most %u MiB; the trace "
                                "directory is damaged: re-record it", METADATA_MAX_BYTES >> 20);
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *text = malloc(size + 1);
    if (!text) {
        close(fd);
        return fail(r, -ENOMEM, "out of memory reading metadata; free some memory");
    }
    while (got < size) {
        ssize_t n = read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    text[got] = '\0';
    char err[BMT_META_ERROR_BYTES];
    int rc = bmt_meta_parse(&r->meta, text, got, err);
    free(text);
    if (rc == -ENOMEM)
        return fail(r, rc, "out of memory parsing metadata; free some memory");
    if (rc < 0)
        return fail(r, rc, "metadata: %s", err);
    return 0;
}

static int by_version(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the stream files of the directory, sorted so channel0_2 < channel0_10. */
static int list_streams(struct bmt_reader *r, char ***names_out, unsigned *count_out)
{
    DIR *d = opendir(r->dir);
    if (!d) {
        int e = errno;
        if (e == ENOENT)
            return fail(r, -e, "no such directory; check the path");
        if (e == ENOTDIR)
            return fail(r, -e, "not a directory; pass the trace directory (the one that holds "
                               "`metadata`)");
        return fail(r, -e, "cannot open the directory: %s; check its permissions", strerror(e));
    }
    char **names = NULL;
    unsigned count = 0, cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "metadata") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) {
                rc = -ENOMEM;
                break;
            }
            names = grown;
        }
        if (!(names[count] = strdup(de->d_name))) {
            rc = -ENOMEM;
            break;
        }
        count++;
    }
    closedir(d);
    if (rc < 0) {
        for (unsigned i = 0; i < count; i++)
            free(names[i]);
        free(names);
        return fail(r, rc, "out of memory listing the directory; free some memory");
    }
    if (count)
        qsort(names, count, sizeof *names, by_version);
    *names_out = names;
    *count_out = count;
    return 0;
}

static int map_stream(struct bmt_reader *r, struct bmt_reader_stream *s, const char *name)
{
    size_t len = strlen(r->dir) + strlen(name) + 2;
    if (!(s->path = malloc(len)))
        return fail(r, -ENOMEM, "out of memory; free some memory");
    snprintf(s->path, len, "%s/%s", r->dir, name);
    s->file = s->path + strlen(r->dir) + 1;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return fail(r, -e, "%s: cannot open: %s; check its permissions", name, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail(r, -e, "%s: cannot stat: %s; check the file system", name, strerror(e));
    }
    s->size_bytes = (size_t)st.st_size;
    if (s->size_bytes > 0) {
        void *m = mmap(NULL, s->size_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            s->size_bytes = 0;
            return fail(r, -e, "%s: cannot map: %s; check free address space and the file",
                        name, strerror(e));
        }
        madvise(m, s->size_bytes, MADV_SEQUENTIAL);
        s->map = m;
    }
    close(fd);
    return 0;
}

int bmt_reader_open(struct bmt_reader *r, const char *dir)
{
    memset(r, 0, sizeof *r);
    r->dir = dir;
    r->popped = -1;
    struct stat st;
    if (stat(dir, &st) != 0) {
        int e = errno;
        if (e == ENOENT)
            return fail(r, -e, "no such directory; check the path");
        return fail(r, -e, "cannot access: %s; check the path and its permissions", strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
        return fail(r, -ENOTDIR, "not a directory; pass the trace directory (the one that "
                                 "holds `metadata`)");
    int rc = read_metadata(r);
    if (rc < 0)
        return rc;
    if (__builtin_mul_overflow(r->meta.clock_offset_s, (int64_t)1000000000, &r->wall_offset_ns) ||
        __builtin_add_overflow(r->wall_offset_ns, r->meta.clock_offset_ns, &r->wall_offset_ns))
        return fail(r, -EINVAL, "metadata: the clock offset overflows 64-bit nanoseconds; the "
                                "metadata is corrupt: re-record the trace");

    r->max_ts_ns = r->wall_offset_ns >= 0 ? (uint64_t)(INT64_MAX - r->wall_offset_ns)
                                          : (uint64_t)INT64_MAX;
    char **names = NULL;
    unsigned count = 0;
    if ((rc = list_streams(r, &names, &count)) < 0)
        return rc;
    r->streams = calloc(count ? count : 1, sizeof *r->streams);
    r->heap = calloc(count ? count : 1, sizeof *r->heap);
    if (!r->streams || !r->heap)
        rc = fail(r, -ENOMEM, "out of memory; free some memory");
    for (unsigned i = 0; i < count; i++) {
        if (rc == 0) {
            rc = map_stream(r, &r->streams[i], names[i]);
            r->stream_count = i + 1;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* Enters the packet at s->next_packet after validating its header. */
static int enter_packet(struct bmt_reader *r, struct bmt_reader_stream *s, unsigned idx)
{
    size_t off = s->next_packet, left = s->size_bytes - off;
    const uint8_t *p = s->map + off;
    if (left < BMT_PKT_HEADER_BYTES)
        return fail(r, -EINVAL, "%s: ends inside a packet header at byte %zu (%zu of %d bytes); %s",
                    s->file, off, left, BMT_PKT_HEADER_BYTES, TRUNCATED_FIX);
    uint32_t magic = bmt_get_u32(p + BMT_PKT_MAGIC);
    if (magic != BMT_CTF_MAGIC)
        return fail(r, -EINVAL, "%s: packet at byte %zu has magic 0x%08x, not 0x%08x; %s",
                    s->file, off, magic, BMT_CTF_MAGIC,
                    off == 0 ? "this file is not a CTF stream: move it out of the trace directory"
                             : TRUNCATED_FIX);
    if (memcmp(p + BMT_PKT_UUID, r->meta.uuid, BMT_CTF_UUID_BYTES) != 0)
        return fail(r, -EINVAL, "%s: packet at byte %zu has a uuid other than the metadata's; "
                                "the file belongs to another trace: move it to its own trace "
                                "directory", s->file, off);
    uint64_t content_bits = bmt_get_u64(p + BMT_PKT_CONTENT_SIZE);
    uint64_t packet_bits = bmt_get_u64(p + BMT_PKT_PACKET_SIZE);
    if (content_bits % 8 || packet_bits % 8)
        return fail(r, -EINVAL, "%s: packet at byte %zu has a content or packet size of %llu/%llu "
                                "bits, not whole bytes; %s", s->file, off,
                    (unsigned long long)content_bits, (unsigned long long)packet_bits,
                    TRUNCATED_FIX);
    uint64_t content = content_bits / 8, packet = packet_bits / 8;
    if (content < BMT_PKT_HEADER_BYTES || packet < content)
        return fail(r, -EINVAL, "%s: packet at byte %zu declares %llu content bytes in a %llu-byte "
                                "packet, less than its own header or content; %s", s->file, off,
                    (unsigned long long)content, (unsigned long long)packet, TRUNCATED_FIX);
    if (packet > left)
        return fail(r, -EINVAL, "%s: packet at byte %zu declares %llu bytes but only %zu remain "
                                "in the file; %s", s->file, off, (unsigned long long)packet, left,
                    TRUNCATED_FIX);

    struct bmt_packet_info info;
    info.ts_begin_ns = bmt_get_u64(p + BMT_PKT_TS_BEGIN);
    info.ts_end_ns = bmt_get_u64(p + BMT_PKT_TS_END);
    info.seq_num = bmt_get_u64(p + BMT_PKT_SEQ_NUM);
    info.events_discarded = bmt_get_u64(p + BMT_PKT_EVENTS_DISCARDED);
    info.first = s->packet_count == 0;
    if (info.first) {
        s->stream_instance_id = bmt_get_u64(p + BMT_PKT_STREAM_INSTANCE_ID);
        /* Packets are numbered from 0 per stream: a later first packet means
         * the oldest ones were overwritten (flight recorder). */
        info.lost_packet_count = info.seq_num;
        info.prev_ts_end_ns = info.ts_begin_ns;
    } else {
        info.lost_packet_count = info.seq_num > s->last_seq + 1 ? info.seq_num - s->last_seq - 1 : 0;
        info.prev_ts_end_ns = s->last_ts_end_ns;
    }
    info.new_discarded_count =
        info.events_discarded > s->discarded_count ? info.events_discarded - s->discarded_count : 0;
    s->discarded_count = info.events_discarded;
    s->lost_packet_count += info.lost_packet_count;
    s->last_seq = info.seq_num;
    s->last_ts_end_ns = info.ts_end_ns;
    s->packet_count++;
    s->cpu_id = bmt_get_u32(p + BMT_PKT_CPU_ID);
    s->cursor = off + BMT_PKT_HEADER_BYTES;
    s->content_end = off + (size_t)content;
    s->next_packet = off + (size_t)packet;
    if (r->on_packet)
        r->on_packet(r->on_packet_ctx, r, idx, &info);
    return 0;
}

static int past_content(struct bmt_reader *r, struct bmt_reader_stream *s, size_t ev_off,
                        const char *what)
{
    return fail(r, -EINVAL, "%s: the event at byte %zu runs past its packet's content end (byte "
                            "%zu)%s; %s", s->file, ev_off, s->content_end, what, TRUNCATED_FIX);
}

/* Decodes the event at s->cursor into s->head and moves the cursor past it. */
static int decode_event(struct bmt_reader *r, struct bmt_reader_stream *s, unsigned idx)
{
    const uint8_t *base = s->map;
    size_t ev_off = s->cursor, off = ev_off, end = s->content_end;
    struct bmt_record *rec = &s->head;
    if (end - off < BMT_EVENT_HEADER_BYTES)
        return past_content(r, s, ev_off, " inside its header");
    uint16_t id = bmt_get_u16(base + off);
    uint16_t tp = r->meta.id_map[id];
    if (tp == BMT_META_NO_EVENT)
        return fail(r, -EINVAL, "%s: the event at byte %zu has id %u, which the metadata does not "
                                "declare; %s", s->file, ev_off, id, TRUNCATED_FIX);
    rec->tp = tp;
    rec->ts_ns = bmt_get_u64(base + off + 2);
    if (rec->ts_ns > r->max_ts_ns)
        return fail(r, -EINVAL, "%s: the event at byte %zu has timestamp %llu ns, beyond what "
                                "64-bit nanoseconds since the epoch can hold; %s", s->file, ev_off,
                    (unsigned long long)rec->ts_ns, TRUNCATED_FIX);
    rec->cpu_id = s->cpu_id;
    rec->stream = idx;
    off += BMT_EVENT_HEADER_BYTES;
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    for (unsigned i = 0; i < t->field_count; i++) {
        struct bmt_value *v = &rec->values[i];
        switch (t->fields[i].type) {
        case BMT_FIELD_STRING: {
            const uint8_t *nul = memchr(base + off, 0, end - off);
            if (!nul)
                return fail(r, -EINVAL, "%s: string field %s of the %s event at byte %zu has no "
                                        "terminating NUL inside its packet; %s", s->file,
                            t->fields[i].name, t->full_name, ev_off, TRUNCATED_FIX);
            v->str = (const char *)(base + off);
            v->len = (uint32_t)(nul - (base + off));
            off = (size_t)(nul - base) + 1;
            break;
        }
        case BMT_FIELD_U32:
            if (end - off < 4)
                return past_content(r, s, ev_off, "");
            v->integer = bmt_get_u32(base + off);
            off += 4;
            break;
        case BMT_FIELD_U64:
        case BMT_FIELD_S64:
            if (end - off < 8)
                return past_content(r, s, ev_off, "");
            v->integer = bmt_get_u64(base + off);
            off += 8;
            break;
        }
    }
    s->cursor = off;
    return 1;
}

/* Advances stream `idx` to its next event (into its head). 1, 0 or -EINVAL. */
static int advance(struct bmt_reader *r, unsigned idx)
{
    struct bmt_reader_stream *s = &r->streams[idx];
    for (;;) {
        if (s->cursor < s->content_end)
            return decode_event(r, s, idx);
        if (s->next_packet >= s->size_bytes)
            return 0;
        int rc = enter_packet(r, s, idx);
        if (rc < 0)
            return rc;
    }
}

int bmt_reader_stream_next(struct bmt_reader *r, unsigned stream, const struct bmt_record **rec)
{
    int rc = advance(r, stream);
    if (rc == 1)
        *rec = &r->streams[stream].head;
    return rc;
}

/* Heap order: timestamp, then stream instance, then directory order. */
static int before(const struct bmt_reader *r, unsigned a, unsigned b)
{
    const struct bmt_reader_stream *sa = &r->streams[a], *sb = &r->streams[b];
    if (sa->head.ts_ns != sb->head.ts_ns)
        return sa->head.ts_ns < sb->head.ts_ns;
    if (sa->stream_instance_id != sb->stream_instance_id)
        return sa->stream_instance_id < sb->stream_instance_id;
    return a < b;
}

static void sift_down(struct bmt_reader *r, unsigned i)
{
    unsigned *h = r->heap, n = r->heap_count;
    for (;;) {
        unsigned l = 2 * i + 1, m = i;
        if (l < n && before(r, h[l], h[m]))
            m = l;
        if (l + 1 < n && before(r, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        unsigned t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(struct bmt_reader *r, unsigned i)
{
    unsigned *h = r->heap;
    while (i > 0) {
        unsigned parent = (i - 1) / 2;
        if (!before(r, h[i], h[parent]))
            return;
        unsigned t = h[i];
        h[i] = h[parent];
        h[parent] = t;
        i = parent;
    }
}

int bmt_reader_next(struct bmt_reader *r, const struct bmt_record **rec)
{
    int rc;
    if (!r->merge_started) {
        r->merge_started = 1;
        for (unsigned i = 0; i < r->stream_count; i++) {
            if ((rc = advance(r, i)) < 0)
                return rc;
            if (rc == 1) {
                r->heap[r->heap_count++] = i;
                sift_up(r, r->heap_count - 1);
            }
        }
    } else if (r->popped >= 0) {
        /* The stream returned last is still on top: refill it in place. */
        if ((rc = advance(r, (unsigned)r->popped)) < 0)
            return rc;
        if (rc == 0)
            r->heap[0] = r->heap[--r->heap_count];
        if (r->heap_count)
            sift_down(r, 0);
    }
    if (r->heap_count == 0) {
        r->popped = -1;
        return 0;
    }
    r->popped = (int)r->heap[0];
    *rec = &r->streams[r->popped].head;
    return 1;
}

void bmt_reader_close(struct bmt_reader *r)
{
    for (unsigned i = 0; r->streams && i < r->stream_count; i++) {
        struct bmt_reader_stream *s = &r->streams[i];
        if (s->map)
            munmap((void *)(uintptr_t)s->map, s->size_bytes);
        free(s->path);
    }
    free(r->streams);
    free(r->heap);
    r->streams = NULL;
    r->heap = NULL;
    r->stream_count = 0;
    bmt_meta_free(&r->meta);
}
