/* Opening a trace: finding its directories, reading each metadata, and
 * mapping and grouping its stream files (contract in reader.h); closing it.
 *
 * Files whose first packets name the same stream class and stream instance
 * are one stream (LTTng's tracefile rotation), their files in the order of
 * their first packet's time, as babeltrace2 groups them. Every file is
 * mapped whole, read-only; reader.c hands the pages back as it goes.
 */
#define _GNU_SOURCE /* strverscmp */
#include "reader.h"
#include "decode.h"
#include "reader_priv.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define METADATA_MAX_BYTES (64u << 20)
#define MAX_TRACE_DEPTH 8
#define MAX_TRACES 4096

/* ---- finding traces ---- */

/* A directory holding a regular file `metadata` (not a symbolic link). */
static int is_trace_dir(const char *dir)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/metadata", dir);
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int by_version(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

struct names {
    char **v;
    unsigned count, cap;
};

static int names_add(struct names *n, const char *s)
{
    if (n->count == n->cap) {
        unsigned cap = n->cap ? n->cap * 2 : 16;
        char **g = realloc(n->v, cap * sizeof *g);
        if (!g)
            return -ENOMEM;
        n->v = g;
        n->cap = cap;
    }
    if (!(n->v[n->count] = strdup(s)))
        return -ENOMEM;
    n->count++;
    return 0;
}

static void names_free(struct names *n)
{
    for (unsigned i = 0; i < n->count; i++)
        free(n->v[i]);
    free(n->v);
    memset(n, 0, sizeof *n);
}

/* The search below a directory: its ancestors' identities (a directory
 * that is its own ancestor, through a bind mount, is a loop) and the
 * symbolic links it did not follow. */
struct search {
    dev_t dev[MAX_TRACE_DEPTH + 1];
    ino_t ino[MAX_TRACE_DEPTH + 1];
    unsigned links_skipped;
    char first_link[4200];
};

/* Collects the directories below `dir` (depth `depth`, identity `st`) that
 * hold `metadata`, not looking inside a trace directory (its
 * subdirectories are LTTng's index/). Symbolic links are never followed,
 * as `find` does not by default: traces are private, and a link to `/` or
 * to a parent would make the search endless. */
static int find_traces(const char *dir, const struct stat *st, unsigned depth, struct names *out,
                       struct search *s)
{
    if (is_trace_dir(dir))
        return out->count < MAX_TRACES ? names_add(out, dir) : 0;
    if (depth >= MAX_TRACE_DEPTH)
        return 0;
    for (unsigned i = 0; i < depth; i++)
        if (s->dev[i] == st->st_dev && s->ino[i] == st->st_ino)
            return 0; /* a loop */
    s->dev[depth] = st->st_dev;
    s->ino[depth] = st->st_ino;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct names subs = {0};
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[4200];
        struct stat sub;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path ||
            fstatat(dirfd(d), de->d_name, &sub, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISLNK(sub.st_mode)) {
            if (s->links_skipped++ == 0)
                snprintf(s->first_link, sizeof s->first_link, "%s", path);
        } else if (S_ISDIR(sub.st_mode)) {
            rc = names_add(&subs, path);
        }
    }
    closedir(d);
    if (subs.count)
        qsort(subs.v, subs.count, sizeof *subs.v, by_version);
    for (unsigned i = 0; rc == 0 && i < subs.count; i++) {
        struct stat sub;
        if (lstat(subs.v[i], &sub) == 0 && S_ISDIR(sub.st_mode))
            rc = find_traces(subs.v[i], &sub, depth + 1, out, s);
    }
    names_free(&subs);
    return rc;
}

static int read_metadata(struct bmt_reader *r, struct bmt_trace *t)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/metadata", t->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        return bmt_reader_fail(r, -e, "%s: cannot open: %s; check the directory's permissions", path,
                    strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > METADATA_MAX_BYTES) {
        close(fd);
        return bmt_reader_fail(r, -EINVAL, "%s is not a regular file of at most %u MiB; the trace directory "
                    "is damaged", path, METADATA_MAX_BYTES >> 20);
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *text = malloc(size + 1);
    if (!text) {
        close(fd);
        return bmt_reader_fail(r, -ENOMEM, "out of memory reading metadata; free some memory");
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
    int rc = bmt_meta_parse(&t->meta, text, got, err);
    free(text);
    if (rc == -ENOMEM)
        return bmt_reader_fail(r, rc, "out of memory parsing metadata; free some memory");
    if (rc < 0) {
        if (r->trace_count > 1)
            return bmt_reader_fail(r, rc, "%s: metadata: %s", t->dir, err);
        return bmt_reader_fail(r, rc, "metadata: %s", err);
    }
    return 0;
}

/* The event clock of trace `t` (its streams' clock), its origin and frequency. */
static int trace_clock(struct bmt_reader *r, struct bmt_trace *t)
{
    const struct bmt_meta *m = &t->meta;
    int32_t c = -1;
    for (unsigned i = 0; i < m->stream_count; i++)
        if (m->streams[i]->clock >= 0) {
            if (c >= 0 && c != m->streams[i]->clock)
                return bmt_reader_fail(r, -EINVAL, "metadata: streams use different clocks; beamtrace reads "
                            "traces with one clock: use babeltrace2");
            c = m->streams[i]->clock;
        }
    if (c < 0)
        return bmt_reader_fail(r, -EINVAL, "metadata: no event or packet time is mapped to a clock; beamtrace "
                    "needs timed events: read this trace with babeltrace2");
    const struct bmt_ctf_clock *k = &m->clocks[c];
    t->freq_hz = k->freq_hz;
    __int128 ns = (__int128)k->offset_s * NS_PER_S +
                  (__int128)k->offset_cycles * NS_PER_S / (__int128)k->freq_hz;
    if (ns > INT64_MAX || ns < INT64_MIN)
        return bmt_reader_fail(r, -EINVAL, "metadata: the clock offset overflows 64-bit nanoseconds; the "
                    "metadata is damaged");
    t->origin_ns = (int64_t)ns;
    return 0;
}

static int list_streams(struct bmt_reader *r, const char *dir, struct names *out)
{
    DIR *d = opendir(dir);
    if (!d) {
        int e = errno;
        return bmt_reader_fail(r, -e, "%s: cannot open the directory: %s; check its permissions", dir,
                    strerror(e));
    }
    struct dirent *de;
    int rc = 0;
    struct names local = {0};
    unsigned links = 0;
    char link[256] = "";
    while (rc == 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "metadata") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        struct stat target;
        if (S_ISLNK(st.st_mode) && fstatat(dirfd(d), de->d_name, &target, 0) == 0 &&
            S_ISREG(target.st_mode) && !links++)
            snprintf(link, sizeof link, "%s", de->d_name); /* a file the user may miss */
        if (!S_ISREG(st.st_mode))
            continue;
        rc = names_add(&local, de->d_name);
    }
    closedir(d);
    /* Traces are private: a symbolic link among the stream files is not
     * read (it could name any file), but may be a stream the user meant. */
    if (links)
        bmt_reader_warn(r, "%s: %u symbolic link%s (%s%s) not read as stream file%s; copy the "
                        "file%s into the trace directory to read %s", dir, links,
                        links > 1 ? "s" : "", link, links > 1 ? ", ..." : "",
                        links > 1 ? "s" : "", links > 1 ? "s" : "", links > 1 ? "them" : "it");
    if (local.count)
        qsort(local.v, local.count, sizeof *local.v, by_version);
    for (unsigned i = 0; rc == 0 && i < local.count; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, local.v[i]);
        rc = names_add(out, path);
    }
    names_free(&local);
    return rc < 0 ? bmt_reader_fail(r, rc, "out of memory listing the directory; free some memory") : 0;
}

static int map_file(struct bmt_reader *r, struct bmt_stream_file *f, const char *path)
{
    if (!(f->path = strdup(path)))
        return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        return bmt_reader_fail(r, -e, "%s: cannot open: %s; check its permissions", f->path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return bmt_reader_fail(r, -e, "%s: cannot stat: %s; check the file system", f->path, strerror(e));
    }
    f->size_bytes = (uint64_t)st.st_size;
    if (f->size_bytes > 0) {
        void *m = mmap(NULL, f->size_bytes, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            f->size_bytes = 0;
            return bmt_reader_fail(r, -e, "%s: cannot map: %s; check free address space and the file",
                        f->path, strerror(e));
        }
        madvise(m, f->size_bytes, MADV_SEQUENTIAL);
        f->map = m;
    }
    close(fd);
    r->total_bytes += f->size_bytes;
    return 0;
}

/* What a file's first packet says of its stream, for grouping. */
struct first_packet {
    int has_instance;
    uint64_t class_id, instance, begin;
    unsigned index;              /* file's position in the directory listing */
};

static void peek_first(const struct bmt_meta *m, const struct bmt_stream_file *f,
                       struct bmt_value *scratch, struct first_packet *fp)
{
    struct bmt_decode d;
    memset(&d, 0, sizeof d);
    d.base = f->map;
    d.end = f->size_bytes > UINT64_MAX / 8 ? UINT64_MAX : f->size_bytes * 8;
    d.vals = scratch;
    if (!f->map || (m->packet_header && bmt_decode(&d, m->packet_header) < 0))
        return;
    const struct bmt_ctf_stream_class *sc =
        bmt_meta_stream(m, d.seen >> BMT_M_STREAM_ID & 1, d.meaning[BMT_M_STREAM_ID]);
    if (!sc)
        return;
    fp->class_id = sc->id;
    fp->has_instance = d.seen >> BMT_M_STREAM_INSTANCE_ID & 1;
    fp->instance = d.meaning[BMT_M_STREAM_INSTANCE_ID];
    if (sc->packet_context && bmt_decode(&d, sc->packet_context) == 0)
        fp->begin = d.meaning[BMT_M_TS_BEGIN];
}

static const struct first_packet *sort_fp;

static int by_begin(const void *a, const void *b)
{
    const struct first_packet *x = &sort_fp[*(const unsigned *)a], *y = &sort_fp[*(const unsigned *)b];
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Maps the files of trace `t` and groups them into streams (appended to
 * r->streams, which has room for `count` more). */
static int open_streams(struct bmt_reader *r, struct bmt_trace *t, char **paths, unsigned count,
                        uint32_t slots)
{
    struct bmt_stream_file *files = calloc(count + 1, sizeof *files);
    struct first_packet *fp = calloc(count + 1, sizeof *fp);
    unsigned *order = calloc(count + 1, sizeof *order);
    struct bmt_value *scratch = calloc(slots, sizeof *scratch);
    uint8_t *taken = calloc(count + 1, 1);
    int rc = 0;
    if (!files || !fp || !order || !scratch || !taken)
        rc = bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
    for (unsigned i = 0; rc == 0 && i < count; i++) {
        rc = map_file(r, &files[i], paths[i]);
        fp[i].index = i;
        if (rc == 0)
            peek_first(&t->meta, &files[i], scratch, &fp[i]);
    }
    for (unsigned i = 0; rc == 0 && i < count; i++) {
        if (taken[i])
            continue;
        unsigned n = 0;
        for (unsigned k = i; k < count; k++)
            if (k == i || (!taken[k] && fp[i].has_instance && fp[k].has_instance &&
                           fp[k].class_id == fp[i].class_id && fp[k].instance == fp[i].instance)) {
                order[n++] = k;
                taken[k] = 1;
            }
        sort_fp = fp;
        qsort(order, n, sizeof *order, by_begin);
        struct bmt_reader_stream *s = &r->streams[r->stream_count++];
        s->trace = t;
        s->trace_index = (unsigned)(t - r->traces);
        s->packet_end_ns = UINT64_MAX;
        s->files = calloc(n, sizeof *s->files);
        s->vals = calloc(slots, sizeof *s->vals);
        if (!s->files || !s->vals) {
            rc = bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
            break;
        }
        for (unsigned k = 0; k < n; k++) {
            s->files[k] = files[order[k]];
            memset(&files[order[k]], 0, sizeof files[order[k]]);
        }
        s->file_count = n;
        s->path = s->files[0].path;
        const char *slash = strrchr(s->path, '/');
        s->file = slash ? slash + 1 : s->path;
        s->map = s->files[0].map;
        s->size_bytes = s->files[0].size_bytes;
    }
    for (unsigned i = 0; files && i < count; i++) { /* left over after a failure */
        if (files[i].map)
            munmap((void *)(uintptr_t)files[i].map, files[i].size_bytes);
        free(files[i].path);
    }
    free(files);
    free(fp);
    free(order);
    free(scratch);
    free(taken);
    return rc;
}

void bmt_reader_label(const char *const *paths, unsigned count, char *buf, size_t size)
{
    if (count > 1)
        snprintf(buf, size, "%s (and %u more)", paths[0], count - 1);
    else
        snprintf(buf, size, "%s", count ? paths[0] : "");
}

/* The traces at `path` (a trace directory or a directory above traces),
 * appended to `dirs`. `many`: name the path in error lines. */
static int find_input(struct bmt_reader *r, const char *path, int many, struct names *dirs)
{
    const char *who = many ? path : "", *sep = many ? ": " : "";
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        if (e == ENOENT)
            return bmt_reader_fail(r, -e, "%s%sno such directory; check the path", who, sep);
        return bmt_reader_fail(r, -e, "%s%scannot access: %s; check the path and its permissions",
                               who, sep, strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
        return bmt_reader_fail(r, -ENOTDIR, "%s%snot a directory; pass the trace directory (the one "
                               "that holds `metadata`, or a directory above it)", who, sep);
    unsigned before = dirs->count;
    struct search s;
    memset(&s, 0, sizeof s);
    int rc = find_traces(path, &st, 0, dirs, &s);
    if (rc < 0)
        return bmt_reader_fail(r, rc, "out of memory listing directories; free some memory");
    if (dirs->count == before && s.links_skipped)
        return bmt_reader_fail(r, -ENOENT, "%s%sno metadata file here or below, where %u symbolic "
                               "link%s (%s) %s not followed; pass the trace directory itself (a "
                               "link's target, for one)", who, sep, s.links_skipped,
                               s.links_skipped > 1 ? "s" : "", s.first_link,
                               s.links_skipped > 1 ? "were" : "was");
    if (dirs->count == before)
        return bmt_reader_fail(r, -ENOENT, "%s%sno metadata file here or below; this is not a trace "
                               "directory: pass a directory written by beamtrace or LTTng (it holds "
                               "`metadata` and stream files)", who, sep);
    return 0;
}

/* Length of `dir` without its "-YYYYMMDD-HHMMSS" ending (the datetime an
 * lttng-relayd names a connection's directory with), or 0 without one. */
static size_t relayd_stem(const char *dir)
{
    size_t n = strlen(dir);
    static const char form[] = "-########-######";
    size_t k = sizeof form - 1;
    if (n <= k)
        return 0;
    for (size_t i = 0; i < k; i++)
        if (form[i] == '#' ? !isdigit((unsigned char)dir[n - k + i]) : dir[n - k + i] != form[i])
            return 0;
    return n - k;
}

/* 1 when directories `a` and `b` are two connections' copies of one
 * trace on an lttng-relayd: siblings named <proc>-<pid>-<datetime> with the
 * same <proc>-<pid> and different datetimes. A trace given twice, or a
 * copy of it, is not (its packets would be read twice). */
static int relayd_siblings(const char *a, const char *b)
{
    size_t n = relayd_stem(a);
    return n && n == relayd_stem(b) && strncmp(a, b, n) == 0 && strcmp(a, b) != 0;
}

/* A trace the relayd received over several connections (it reconnected
 * after losing the relayd, or the relayd restarted) lies in one directory
 * per connection (relayd_siblings), each with the same metadata and trace
 * UUID and its share of every stream's packets (numbered on across
 * connections). As babeltrace2 does, those directories are one trace: the
 * later ones join the first's list (more_dirs) and leave r->traces. */
static int fold_same_traces(struct bmt_reader *r)
{
    unsigned kept = 0;
    for (unsigned i = 0; i < r->trace_count; i++) {
        struct bmt_trace *t = &r->traces[i], *same = NULL;
        for (unsigned j = 0; t->meta.has_uuid && j < kept && !same; j++)
            if (r->traces[j].meta.has_uuid &&
                memcmp(r->traces[j].meta.uuid, t->meta.uuid, sizeof t->meta.uuid) == 0 &&
                relayd_siblings(r->traces[j].dir, t->dir))
                same = &r->traces[j];
        if (!same) {
            if (kept != i)
                r->traces[kept] = *t;
            kept++;
            continue;
        }
        unsigned n = 0;
        while (same->more_dirs && same->more_dirs[n])
            n++;
        char **more = realloc(same->more_dirs, (n + 2) * sizeof *more);
        if (!more) {
            r->trace_count = kept + (r->trace_count - i);
            memmove(&r->traces[kept], t, (r->trace_count - kept) * sizeof *t);
            return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
        }
        more[n] = t->dir;
        more[n + 1] = NULL;
        same->more_dirs = more;
        bmt_meta_free(&t->meta);
    }
    r->trace_count = kept;
    return 0;
}

/* What a trace of a cluster is known by: its node (environment
 * beamtrace_node), or, for a trace that is not beamtrace's, its directory's
 * name, as the cluster layout names them. */
static const char *node_key(const struct bmt_trace *t)
{
    const char *slash = strrchr(t->dir, '/');
    return t->node ? t->node : slash ? slash + 1 : t->dir;
}

static int by_node(const void *a, const void *b)
{
    const struct bmt_trace *x = a, *y = b;
    int c = strverscmp(node_key(x), node_key(y));
    return c ? c : strverscmp(x->dir, y->dir);
}

/* The node of each trace (environment beamtrace_node); two traces of one
 * node cannot be merged (their pids would be one process). Sets r->cluster
 * when two or more traces name their nodes, and then orders the traces,
 * so the node ids, by node name: every analysis lists the nodes in that
 * order, whatever the directories are called (an lttng-relayd names each
 * node's by its OS pid, which wraps) or the order they were given in, so
 * two copies of one recording give the same output. Runs before the
 * streams are listed (they follow the trace order). */
static int find_nodes(struct bmt_reader *r)
{
    unsigned named = 0;
    for (unsigned i = 0; i < r->trace_count; i++) {
        struct bmt_trace *t = &r->traces[i];
        for (unsigned k = 0; k < t->meta.env_count; k++)
            if (t->meta.env[k].str && strcmp(t->meta.env[k].key, "beamtrace_node") == 0)
                t->node = t->meta.env[k].str;
        if (!t->node)
            continue;
        named++;
        for (unsigned j = 0; j < i; j++)
            if (r->traces[j].node && strcmp(r->traces[j].node, t->node) == 0)
                return bmt_reader_fail(r, -EINVAL, "two traces of node %s (%s and %s); pass one "
                                       "trace per node", t->node, r->traces[j].dir, t->dir);
    }
    if (named < 2)
        return 0;
    qsort(r->traces, r->trace_count, sizeof *r->traces, by_node);
    const char **node = calloc(r->trace_count + 1, sizeof *node);
    if (!node)
        return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
    for (unsigned i = 0; i < r->trace_count; i++)
        node[i] = node_key(&r->traces[i]);
    int rc = bmt_nodes_init(&r->nodes, node, r->trace_count);
    free(node);
    if (rc < 0)
        return bmt_reader_fail(r, rc, "out of memory; free some memory");
    r->cluster = 1;
    return 0;
}

static int open_traces(struct bmt_reader *r, const char *const *paths, unsigned count,
                       int quiet);

int bmt_reader_open_quiet(struct bmt_reader *r, const char *const *paths, unsigned count)
{
    return open_traces(r, paths, count, 1);
}

int bmt_reader_open(struct bmt_reader *r, const char *const *paths, unsigned count)
{
    return open_traces(r, paths, count, 0);
}

static int open_traces(struct bmt_reader *r, const char *const *paths, unsigned count,
                       int quiet)
{
    memset(r, 0, sizeof *r);
    r->quiet = quiet;
    bmt_field_set_all(&r->want);
    r->dir = count ? paths[0] : "";
    r->popped = -1;
    bmt_progress_start(&r->progress, "reading the trace");
    struct names dirs = {0}, files = {0};
    int rc = 0;
    for (unsigned i = 0; rc == 0 && i < count; i++)
        rc = find_input(r, paths[i], count > 1, &dirs);
    if (rc == 0 && count == 0)
        rc = bmt_reader_fail(r, -ENOENT, "no trace directory given; pass one");
    if (rc < 0) {
        names_free(&dirs);
        return rc;
    }
    r->traces = calloc(dirs.count, sizeof *r->traces);
    if (!r->traces) {
        names_free(&dirs);
        return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
    }
    for (unsigned i = 0; i < dirs.count; i++) {
        r->traces[i].dir = dirs.v[i];
        dirs.v[i] = NULL;
    }
    r->trace_count = dirs.count;
    names_free(&dirs);
    for (unsigned i = 0; rc == 0 && i < r->trace_count; i++)
        if ((rc = read_metadata(r, &r->traces[i])) == 0)
            rc = trace_clock(r, &r->traces[i]);
    if (rc == 0)
        rc = fold_same_traces(r);
    if (rc == 0)
        rc = find_nodes(r);
    unsigned *first_stream = calloc(r->trace_count + 1, sizeof *first_stream);
    if (rc < 0 || !first_stream) {
        free(first_stream);
        return rc < 0 ? rc : bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
    }
    for (unsigned i = 0; rc == 0 && i < r->trace_count; i++) {
        struct bmt_trace *t = &r->traces[i];
        bmt_ctf_uuid_text(t->meta.uuid, t->uuid_text);
        t->event_base = r->event_class_count;
        r->event_class_count += t->meta.event_count;
        if (i == 0 || t->origin_ns < r->origin_ns)
            r->origin_ns = t->origin_ns;
        first_stream[i] = files.count;
        rc = list_streams(r, t->dir, &files);
        for (unsigned k = 0; rc == 0 && t->more_dirs && t->more_dirs[k]; k++)
            rc = list_streams(r, t->more_dirs[k], &files);
    }
    first_stream[r->trace_count] = files.count;
    if (rc == 0) {
        r->streams = calloc(files.count ? files.count : 1, sizeof *r->streams);
        r->heap = calloc(files.count ? files.count : 1, sizeof *r->heap);
        if (!r->streams || !r->heap)
            rc = bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
    }
    r->max_ts_ns = r->origin_ns >= 0 ? (uint64_t)(INT64_MAX - r->origin_ns) : (uint64_t)INT64_MAX;
    for (unsigned i = 0; rc == 0 && i < r->trace_count; i++) {
        struct bmt_trace *t = &r->traces[i];
        t->delta_ns = (uint64_t)(t->origin_ns - r->origin_ns);
        uint32_t slots = 1;
        for (unsigned k = 0; k < t->meta.stream_count; k++)
            if (t->meta.streams[k]->slot_count > slots)
                slots = t->meta.streams[k]->slot_count;
        if (t->meta.header_slots > slots)
            slots = t->meta.header_slots;
        rc = open_streams(r, t, files.v + first_stream[i], first_stream[i + 1] - first_stream[i],
                          slots);
    }
    free(first_stream);
    names_free(&files);
    return rc;
}

void bmt_reader_close(struct bmt_reader *r)
{
    bmt_progress_clear(&r->progress);
    for (unsigned i = 0; r->streams && i < r->stream_count; i++) {
        struct bmt_reader_stream *s = &r->streams[i];
        for (unsigned f = 0; s->files && f < s->file_count; f++) {
            if (s->files[f].map)
                munmap((void *)(uintptr_t)s->files[f].map, s->files[f].size_bytes);
            free(s->files[f].path);
        }
        free(s->files);
        free(s->vals);
    }
    for (unsigned i = 0; r->traces && i < r->trace_count; i++) {
        bmt_meta_free(&r->traces[i].meta);
        free(r->traces[i].dir);
        for (unsigned k = 0; r->traces[i].more_dirs && r->traces[i].more_dirs[k]; k++)
            free(r->traces[i].more_dirs[k]);
        free(r->traces[i].more_dirs);
    }
    if (r->cluster)
        bmt_nodes_free(&r->nodes);
    r->compiled = 0;
    bmt_arena_free(&r->plan_arena);
    r->selected = 0;
    r->cluster = 0;
    free(r->streams);
    free(r->traces);
    free(r->heap);
    r->streams = NULL;
    r->traces = NULL;
    r->heap = NULL;
    r->stream_count = r->trace_count = 0;
}
