/* beamtrace record: trace a running node from outside, with nothing of
 * beamtrace installed on it.
 *
 * This file parses the command line, finds the cookie, and starts a hidden
 * `erl` controller node running beamtrace_record (src/beamtrace_record.erl),
 * which does the distribution work: connecting (TLS distribution too, as
 * any erl: -proto_dist and -ssl_dist_optfile are passed through), checking
 * the target, shipping beamtrace, recording with the guard rails, copying
 * the trace back and removing what it shipped.
 *
 * The cookie never appears on a command line (ps would show it): it is the
 * first line written to the controller's stdin, followed by the options as
 * one Erlang term. The controller answers on its stdout, one line each:
 * `progress ELAPSED_MS EVENTS DISCARDED BYTES` (drawn as one line on a
 * TTY), `note TEXT` (stderr), `error TEXT` (stderr, "beamtrace: record:"),
 * `result TEXT` (stdout); anything else (the VM's own messages) goes to
 * stderr as is. Its exit status is this command's.
 *
 * Ctrl-C (SIGINT, and SIGTERM, SIGHUP) writes `stop` to the controller: it
 * stops the trace, copies it back and cleans up; while shipping, it undoes
 * what it shipped and exits 130. A second Ctrl-C kills the controller: the
 * agent on the target then removes everything when the connection drops.
 * The controller runs in its own process group, so the terminal's Ctrl-C
 * reaches this process only; if this process dies, the controller reads
 * end of file and cleans up the same way.
 *
 * One file, past the usual size: the CLI keeps one file per subcommand,
 * and this one is the command line, the cookie, the controller's process
 * and its output protocol, each a short section below.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "record/record_sources.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CMD "record"
#define MAX_CALLS 64
#define EXIT_INTERRUPTED 130

struct record_opts {
    const char *node;
    const char *nodes;        /* --nodes a@h1,b@h2,...: a cluster */
    int cluster;              /* --cluster: --node and every node connected to it */
    int links;                /* --links: message events with what links them */
    const char *cookie_file;
    const char *calls[MAX_CALLS];
    int call_count;
    const char *procs;        /* all | new | existing | NAME,NAME,... */
    const char *events;       /* procs,send,... */
    const char *duration;     /* as given, for messages */
    int64_t duration_ms;      /* -1: infinity */
    int64_t max_events;       /* 0: infinity */
    int64_t max_bytes;        /* 0: the recorder's default */
    int64_t max_rate;         /* events/s; 0: infinity */
    const char *out;
    int remote_dir;           /* leave the trace on the target */
    const char *remote_dir_path;
    const char *remote_tmp;
    const char *proto_dist;
    const char *ssl_dist_optfile;
    int keep;
    int return_to;
    struct bmt_record_sources sources; /* --samples, --system-monitor, ... */
};

/* ---- a growable text buffer for the options term ---- */

struct text {
    char *buf;
    size_t len, cap;
    int failed;
};

static void text_add(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = 1;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void text_str(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* An Erlang binary <<"...">> holding `s`'s bytes (UTF-8 stays UTF-8: the
 * escapes \x{..} are bytes in a plain binary; with /utf8 they would be
 * encoded again). */
static void text_binary(struct text *t, const char *s)
{
    text_str(t, "<<\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p, esc[2] = '\0';
            text_str(t, esc);
        } else if (*p < 0x20 || *p >= 0x7f) {
            snprintf(esc, sizeof esc, "\\x{%x}", *p);
            text_str(t, esc);
        } else {
            text_add(t, (const char *)p, 1);
        }
    }
    text_str(t, "\">>");
}

static void text_int(struct text *t, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    text_str(t, b);
}

/* Formats a path into out; -1 if it does not fit. */
static int path_format(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int path_format(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, size, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* ---- option values ---- */

/* "10s", "500ms", "2m", "1h", "1.5s", "infinity"; a bare number is
 * seconds. Returns 0 and *ms (-1 for infinity), or -1. */
static int parse_duration(const char *s, int64_t *ms)
{
    if (strcmp(s, "infinity") == 0) {
        *ms = -1;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0)
        return -1;
    double scale;
    if (*end == '\0' || strcmp(end, "s") == 0)
        scale = 1000;
    else if (strcmp(end, "ms") == 0)
        scale = 1;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        scale = 60000;
    else if (strcmp(end, "h") == 0)
        scale = 3600000;
    else
        return -1;
    double r = v * scale;
    if (r < 1 || r > 1e15)
        return -1;
    *ms = (int64_t)r;
    return 0;
}

/* "1000", "64K", "64KiB", "10M", "1G" (powers of 1024). */
static int parse_size(const char *s, int64_t *bytes)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || v == 0 || *s == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10, end++; break;
    case 'm': case 'M': shift = 20, end++; break;
    case 'g': case 'G': shift = 30, end++; break;
    default: return -1;
    }
    if (*end && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0)
        return -1;
    if (v > (UINT64_C(1) << 62) >> shift)
        return -1;
    *bytes = (int64_t)(v << shift);
    return 0;
}

static int parse_count(const char *s, int64_t *n)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v <= 0)
        return -1;
    *n = v;
    return 0;
}

static const char *const KINDS[] = {"procs", "send", "receive", "running",
                                    "garbage_collection", "ports", "call"};

/* Appends the event kinds of `list` (comma separated) as atoms; returns 0
 * or -1 naming the bad one in *bad (a copy the caller frees). */
static int add_kinds(struct text *t, const char *list, char **bad)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return -1;
    int first = 1, rc = 0;
    for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
            if (strcmp(k, KINDS[i]) == 0)
                break;
        if (i == sizeof KINDS / sizeof KINDS[0]) {
            *bad = strdup(k);
            rc = -1;
            break;
        }
        text_str(t, first ? "'" : ", '");
        text_str(t, KINDS[i]);
        text_str(t, "'");
        first = 0;
    }
    free(copy);
    return rc;
}

/* ---- the cookie ---- */

/* Reads the cookie: --cookie-file, $BEAMTRACE_COOKIE, ~/.erlang.cookie.
 * Returns a malloc'ed string (trailing white space cut) or NULL after
 * printing the error; *from names the source for messages. */
static char *read_cookie(const char *file, char *from, size_t from_size)
{
    const char *env = getenv("BEAMTRACE_COOKIE");
    char path[PATH_MAX];
    if (!file && env && *env) {
        snprintf(from, from_size, "$BEAMTRACE_COOKIE");
        return strdup(env);
    }
    if (!file) {
        const char *home = getenv("HOME");
        if (!home) {
            bmt_cli_error(CMD ": no cookie: give --cookie-file FILE or set BEAMTRACE_COOKIE");
            return NULL;
        }
        snprintf(path, sizeof path, "%s/.erlang.cookie", home);
        file = path;
    }
    snprintf(from, from_size, "%s", file);
    FILE *f = fopen(file, "r");
    if (!f) {
        bmt_cli_error(CMD ": cannot read the cookie from %s: %s (give --cookie-file FILE or "
                      "set BEAMTRACE_COOKIE)", file, strerror(errno));
        return NULL;
    }
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
                 buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (n == 0 || strchr(buf, '\n')) {
        bmt_cli_error(CMD ": the cookie in %s is %s", file, n ? "more than one line" : "empty");
        return NULL;
    }
    return strdup(buf);
}

/* ---- where beamtrace is ---- */

/* The directory holding ebin/ and priv/: $BEAMTRACE_ROOT, or the parent of
 * the directory this executable is in (priv/beamtrace). */
static int find_root(char *root, size_t size)
{
    const char *env = getenv("BEAMTRACE_ROOT");
    if (env && *env) {
        snprintf(root, size, "%s", env);
    } else {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return -1;
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash)
            return -1;
        *slash = '\0';
        slash = strrchr(exe, '/');
        if (slash && slash != exe)
            *slash = '\0';
        else
            snprintf(exe, sizeof exe, "/");
        snprintf(root, size, "%s", exe);
    }
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/ebin/beamtrace_record.beam", root);
    return access(probe, R_OK) == 0 ? 0 : -1;
}

/* ---- signals ---- */

static volatile sig_atomic_t interrupts;

static void on_signal(int sig)
{
    (void)sig;
    interrupts++;
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

/* ---- the controller ---- */

struct controller {
    pid_t pid;
    int in_fd;   /* its stdin */
    int out_fd;  /* its stdout */
};

/* Starts `erl` running beamtrace_record:main/0. Returns 0, or -1 after
 * printing the error. */
static int start_controller(struct controller *c, const char *root, const struct record_opts *o)
{
    const char *erl = getenv("ERL");
    if (!erl || !*erl)
        erl = "erl";
    char ebin[PATH_MAX + 8], cookie[40];
    snprintf(ebin, sizeof ebin, "%s/ebin", root);
    /* The controller's own cookie: random, used for nothing (it accepts no
     * connection) but keeps erl from reading or making ~/.erlang.cookie.
     * The target's cookie is set per node over stdin. */
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        memcpy(rnd, &x, sizeof x);
        memcpy(rnd + 8, &x, sizeof x);
    }
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(cookie + 2 * i, 3, "%02x", rnd[i]);
    const char *argv[24];
    int n = 0;
    argv[n++] = erl;
    argv[n++] = "-noshell";
    argv[n++] = "+Bi";
    argv[n++] = "-setcookie";
    argv[n++] = cookie;
    argv[n++] = "-pa";
    argv[n++] = ebin;
    if (o->proto_dist) {
        argv[n++] = "-proto_dist";
        argv[n++] = o->proto_dist;
    }
    if (o->ssl_dist_optfile) {
        argv[n++] = "-ssl_dist_optfile";
        argv[n++] = o->ssl_dist_optfile;
    }
    argv[n++] = "-s";
    argv[n++] = "beamtrace_record";
    argv[n++] = "main";
    argv[n] = NULL;

    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        goto fail_pipe;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]), close(in[1]);
        goto fail_pipe;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        bmt_cli_error(CMD ": cannot start erl: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* Its own process group: the terminal's Ctrl-C is ours to relay. */
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        execvp(erl, (char *const *)argv);
        fprintf(stderr, "beamtrace: " CMD ": cannot run %s: %s (install Erlang/OTP or set ERL "
                "to the erl to use)\n", erl, strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->pid = pid;
    c->in_fd = in[1];
    c->out_fd = out[0];
    return 0;
fail_pipe:
    bmt_cli_error(CMD ": cannot make a pipe: %s", strerror(errno));
    return -1;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- output ---- */

struct screen {
    int tty;          /* stderr is a terminal: draw progress */
    int progress_on;  /* a progress line is drawn and not ended */
    int done;         /* the result line came: the work is over */
};

static void clear_progress(struct screen *s)
{
    if (s->progress_on) {
        fputs("\r\033[K", stderr);
        s->progress_on = 0;
    }
}

static void human_bytes(uint64_t b, char *buf, size_t size)
{
    if (b >= (UINT64_C(1) << 30))
        snprintf(buf, size, "%.1f GiB", (double)b / (double)(UINT64_C(1) << 30));
    else if (b >= (UINT64_C(1) << 20))
        snprintf(buf, size, "%.1f MiB", (double)b / (double)(UINT64_C(1) << 20));
    else if (b >= 1024)
        snprintf(buf, size, "%.1f KiB", (double)b / 1024.0);
    else
        snprintf(buf, size, "%llu B", (unsigned long long)b);
}

static void handle_line(struct screen *s, char *line)
{
    if (strncmp(line, "progress ", 9) == 0) {
        unsigned long long ms, events, discarded, bytes;
        if (sscanf(line + 9, "%llu %llu %llu %llu", &ms, &events, &discarded, &bytes) == 4 &&
            s->tty) {
            char b[32];
            human_bytes(bytes, b, sizeof b);
            fprintf(stderr, "\r\033[K  %6.1f s  %llu events  %llu discarded  %s", ms / 1000.0,
                    events, discarded, b);
            fflush(stderr);
            s->progress_on = 1;
        }
        return;
    }
    clear_progress(s);
    if (strncmp(line, "note ", 5) == 0) {
        fprintf(stderr, "%s\n", line + 5);
    } else if (strncmp(line, "error ", 6) == 0) {
        bmt_cli_error(CMD ": %s", line + 6);
    } else if (strncmp(line, "result ", 7) == 0) {
        s->done = 1;
        fprintf(stdout, "%s\n", line + 7);
        fflush(stdout);
    } else {
        fprintf(stderr, "%s\n", line);
    }
}

/* Relays the controller's output until it closes its stdout; relays
 * Ctrl-C as `stop`, kills it at the second. Returns its exit status. */
static int run_controller(struct controller *c, struct screen *s)
{
    char buf[8192];
    size_t len = 0;
    int stop_sent = 0, killed = 0;
    for (;;) {
        if (interrupts && !stop_sent) {
            stop_sent = 1;
            clear_progress(s);
            fprintf(stderr, "stopping (Ctrl-C again to abandon: the target then cleans up by "
                    "itself)\n");
            if (write_all(c->in_fd, "stop\n", 5) != 0) {
                /* It is gone already; its exit status tells. */
            }
        } else if (interrupts > 1 && !killed && !s->done) {
            killed = 1;
            kill(c->pid, SIGKILL);
        }
        struct pollfd pfd = {c->out_fd, POLLIN, 0};
        int r = poll(&pfd, 1, 200);
        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0)
            continue;
        ssize_t n = read(c->out_fd, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        char *start = buf, *nl;
        while ((nl = strchr(start, '\n')) != NULL) {
            *nl = '\0';
            handle_line(s, start);
            start = nl + 1;
        }
        len = (size_t)(buf + len - start);
        memmove(buf, start, len);
        if (len == sizeof buf - 1) { /* an endless line: show it as is */
            buf[len] = '\0';
            handle_line(s, buf);
            len = 0;
        }
    }
    if (len) {
        buf[len] = '\0';
        handle_line(s, buf);
    }
    clear_progress(s);
    close(c->out_fd);
    close(c->in_fd);
    int status;
    while (waitpid(c->pid, &status, 0) < 0)
        if (errno != EINTR)
            return BMT_EXIT_FAIL;
    if (WIFSIGNALED(status)) {
        if (killed) {
            bmt_cli_error(CMD ": abandoned (second Ctrl-C): when its connection drops, the "
                          "agent on the target removes what was shipped and stops the trace, "
                          "keeping it there (the directory 'recording on' named; the node's "
                          "log says how to fetch it)");
            return EXIT_INTERRUPTED;
        }
        bmt_cli_error(CMD ": the controller node (erl) died of signal %d", WTERMSIG(status));
        return BMT_EXIT_FAIL;
    }
    /* 127: erl could not be run (the child said why). */
    return WEXITSTATUS(status) == 127 ? BMT_EXIT_FAIL : WEXITSTATUS(status);
}

/* ---- the command ---- */

static int build_term(struct text *t, const struct record_opts *o, const char *root,
                      const char *out, const char *cookie_from, int tty)
{
    char nif[PATH_MAX + 32];
    snprintf(nif, sizeof nif, "%s/priv/beamtrace_nif.so", root);
    text_str(t, "#{node => ");
    text_binary(t, o->node);
    if (o->nodes) {
        char *copy = strdup(o->nodes), *save = NULL;
        int first = 1;
        if (!copy)
            t->failed = 1;
        text_str(t, ", nodes => [");
        for (char *n = copy ? strtok_r(copy, ",", &save) : NULL; n; n = strtok_r(NULL, ",", &save)) {
            text_str(t, first ? "" : ", ");
            text_binary(t, n);
            first = 0;
        }
        text_str(t, "]");
        free(copy);
    }
    if (o->cluster)
        text_str(t, ", cluster => true");
    if (o->links)
        text_str(t, ", links => true");
    text_str(t, ", calls => [");
    for (int i = 0; i < o->call_count; i++) {
        text_str(t, i ? ", " : "");
        text_binary(t, o->calls[i]);
    }
    text_str(t, "], events => [");
    if (o->events) {
        char *bad = NULL;
        if (add_kinds(t, o->events, &bad) != 0) { /* checked when parsed */
            free(bad);
            t->failed = 1;
        }
    }
    text_str(t, "], procs => ");
    const char *p = o->procs ? o->procs : "all";
    if (strcmp(p, "all") == 0 || strcmp(p, "new") == 0 || strcmp(p, "existing") == 0) {
        text_str(t, p);
    } else {
        char *copy = strdup(p), *save = NULL;
        int first = 1;
        text_str(t, "[");
        for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            text_str(t, first ? "" : ", ");
            text_binary(t, name);
            first = 0;
        }
        text_str(t, "]");
        free(copy);
    }
    text_str(t, ", duration => ");
    if (o->duration_ms < 0)
        text_str(t, "infinity");
    else
        text_int(t, o->duration_ms);
    if (o->max_events) {
        text_str(t, ", max_events => ");
        text_int(t, o->max_events);
    }
    if (o->max_bytes) {
        text_str(t, ", max_bytes => ");
        text_int(t, o->max_bytes);
    }
    if (o->max_rate) {
        text_str(t, ", max_rate => ");
        text_int(t, o->max_rate);
    }
    text_str(t, ", out => ");
    text_binary(t, out);
    text_str(t, ", remote_dir => ");
    if (o->remote_dir_path)
        text_binary(t, o->remote_dir_path);
    else
        text_str(t, o->remote_dir ? "true" : "false");
    if (o->remote_tmp) {
        text_str(t, ", remote_tmp => ");
        text_binary(t, o->remote_tmp);
    }
    char sources[8192], err[512];
    if (bmt_record_sources_term(&o->sources, sources, sizeof sources, err, sizeof err) != 0)
        return bmt_cli_usage_error(CMD, "%s", err); /* checked when parsed */
    text_str(t, sources);
    text_str(t, o->keep ? ", keep => true" : ", keep => false");
    text_str(t, o->return_to ? ", return_to => true" : ", return_to => false");
    text_str(t, tty ? ", tty => true" : ", tty => false");
    text_str(t, ", nif => ");
    text_binary(t, nif);
    text_str(t, ", cookie_from => ");
    text_binary(t, cookie_from);
    text_str(t, "}.\n");
    return 0;
}

/* -o's default: ./beamtrace-traces/NAME-YYYYMMDD-HHMMSS (NAME: the node's
 * name before '@'; cluster-NAME for a cluster). Made by the controller once
 * there is a trace to copy: a run that fails earlier leaves nothing here
 * either. */
static int default_out(const char *node, int cluster, char *out, size_t size)
{
    char name[300];
    snprintf(name, sizeof name, "%s%.255s", cluster ? "cluster-" : "", node);
    char *at = strchr(name, '@');
    if (at)
        *at = '\0';
    for (char *c = name; *c; c++)
        if (*c == '/')
            *c = '_';
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, ".");
    for (int i = 1; i < 100; i++) {
        int rc = i == 1 ? path_format(out, size, "%s/beamtrace-traces/%s-%s", cwd, name, stamp)
                        : path_format(out, size, "%s/beamtrace-traces/%s-%s-%d", cwd, name,
                                      stamp, i);
        if (rc != 0)
            break;
        if (access(out, F_OK) != 0)
            return 0;
    }
    bmt_cli_error(CMD ": no free name for the trace in ./beamtrace-traces (give -o DIR)");
    return -1;
}

int bmt_cmd_record(int argc, char **argv)
{
    enum { O_NODE = 256, O_NODES, O_CLUSTER, O_LINKS, O_COOKIE, O_CALLS, O_PROCS, O_EVENTS, O_DURATION, O_MAX_EVENTS,
           O_MAX_BYTES, O_MAX_RATE, O_REMOTE_DIR, O_REMOTE_TMP, O_KEEP, O_RETURN_TO,
           O_PROTO_DIST, O_SSL_OPTFILE, O_SAMPLES, O_SYSTEM_MONITOR, O_DISTRIBUTION, O_FILE_IO,
           O_ETS };
    static const struct option longopts[] = {
        {"node", required_argument, NULL, O_NODE},
        {"nodes", required_argument, NULL, O_NODES},
        {"cluster", no_argument, NULL, O_CLUSTER},
        {"links", no_argument, NULL, O_LINKS},
        {"cookie-file", required_argument, NULL, O_COOKIE},
        {"calls", required_argument, NULL, O_CALLS},
        {"procs", required_argument, NULL, O_PROCS},
        {"events", required_argument, NULL, O_EVENTS},
        {"duration", required_argument, NULL, O_DURATION},
        {"max-events", required_argument, NULL, O_MAX_EVENTS},
        {"max-bytes", required_argument, NULL, O_MAX_BYTES},
        {"max-rate", required_argument, NULL, O_MAX_RATE},
        {"output", required_argument, NULL, 'o'},
        {"remote-dir", optional_argument, NULL, O_REMOTE_DIR},
        {"remote-tmp", required_argument, NULL, O_REMOTE_TMP},
        {"keep", no_argument, NULL, O_KEEP},
        {"return-to", no_argument, NULL, O_RETURN_TO},
        {"proto-dist", required_argument, NULL, O_PROTO_DIST},
        {"ssl-dist-optfile", required_argument, NULL, O_SSL_OPTFILE},
        {"samples", required_argument, NULL, O_SAMPLES},
        {"system-monitor", required_argument, NULL, O_SYSTEM_MONITOR},
        {"distribution", no_argument, NULL, O_DISTRIBUTION},
        {"file-io", no_argument, NULL, O_FILE_IO},
        {"ets", required_argument, NULL, O_ETS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct record_opts o;
    char first_node[256];
    memset(&o, 0, sizeof o);
    o.duration_ms = 15000;
    o.proto_dist = getenv("BEAMTRACE_PROTO_DIST");
    o.ssl_dist_optfile = getenv("BEAMTRACE_SSL_DIST_OPTFILE");
    if (o.proto_dist && !*o.proto_dist)
        o.proto_dist = NULL;
    if (o.ssl_dist_optfile && !*o.ssl_dist_optfile)
        o.ssl_dist_optfile = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case O_NODE: o.node = optarg; break;
        case O_NODES: o.nodes = optarg; break;
        case O_CLUSTER: o.cluster = 1; break;
        case O_LINKS: o.links = 1; break;
        case O_COOKIE: o.cookie_file = optarg; break;
        case O_CALLS:
            if (o.call_count == MAX_CALLS)
                return bmt_cli_usage_error(CMD, "at most %d --calls", MAX_CALLS);
            o.calls[o.call_count++] = optarg;
            break;
        case O_PROCS: o.procs = optarg; break;
        case O_EVENTS: o.events = optarg; break;
        case O_DURATION:
            o.duration = optarg;
            if (parse_duration(optarg, &o.duration_ms) != 0)
                return bmt_cli_usage_error(CMD, "--duration '%s': expected e.g. 10s, 500ms, 2m "
                                           "or infinity", optarg);
            break;
        case O_MAX_EVENTS:
            if (parse_count(optarg, &o.max_events) != 0)
                return bmt_cli_usage_error(CMD, "--max-events '%s': expected a positive integer",
                                           optarg);
            break;
        case O_MAX_BYTES:
            if (parse_size(optarg, &o.max_bytes) != 0)
                return bmt_cli_usage_error(CMD, "--max-bytes '%s': expected e.g. 100M, 1G or "
                                           "a number of bytes", optarg);
            break;
        case O_MAX_RATE:
            if (parse_count(optarg, &o.max_rate) != 0)
                return bmt_cli_usage_error(CMD, "--max-rate '%s': expected events per second, "
                                           "a positive integer", optarg);
            break;
        case 'o': o.out = optarg; break;
        case O_REMOTE_DIR:
            o.remote_dir = 1;
            o.remote_dir_path = optarg;
            break;
        case O_REMOTE_TMP: o.remote_tmp = optarg; break;
        case O_KEEP: o.keep = 1; break;
        case O_RETURN_TO: o.return_to = 1; break;
        case O_PROTO_DIST: o.proto_dist = optarg; break;
        case O_SSL_OPTFILE: o.ssl_dist_optfile = optarg; break;
        case O_SAMPLES: o.sources.samples = optarg; break;
        case O_SYSTEM_MONITOR: o.sources.system_monitor = optarg; break;
        case O_DISTRIBUTION: o.sources.distribution = 1; break;
        case O_FILE_IO: o.sources.file_io = 1; break;
        case O_ETS: o.sources.ets = optarg; break;
        case 'h':
            bmt_cli_print_usage(CMD);
            return BMT_EXIT_OK;
        case ':':
            return bmt_cli_usage_error(CMD, "option '%s' needs a value", argv[optind - 1]);
        default:
            return bmt_cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bmt_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o.nodes && (o.node || o.cluster))
        return bmt_cli_usage_error(CMD, "--nodes names every node: not with --node or --cluster "
                                   "(--cluster --node NAME records NAME and its nodes)");
    if (o.nodes) {
        if (!*o.nodes || o.nodes[0] == ',' || strstr(o.nodes, ",,") ||
            o.nodes[strlen(o.nodes) - 1] == ',')
            return bmt_cli_usage_error(CMD, "--nodes '%s': expected NAME,NAME,... (e.g. "
                                       "a@host1,b@host2)", o.nodes);
        /* The first one: the controller connects to it first. */
        size_t n = strcspn(o.nodes, ",");
        if (n >= sizeof first_node)
            return bmt_cli_usage_error(CMD, "--nodes: a node name is too long");
        memcpy(first_node, o.nodes, n);
        first_node[n] = '\0';
        o.node = first_node;
    }
    if (!o.node)
        return bmt_cli_usage_error(CMD, "--node NAME is required (e.g. --node myapp@host), or "
                                   "--nodes NAME,NAME,... for several");
    if ((o.nodes || o.cluster) && o.remote_dir)
        return bmt_cli_usage_error(CMD, "--remote-dir leaves one node's trace there: not with "
                                   "--nodes or --cluster");
    if ((o.nodes || o.cluster) && o.procs && strchr(o.procs, '<'))
        return bmt_cli_usage_error(CMD, "--procs: a pid names a process of one node; with "
                                   "--nodes or --cluster give registered names");
    if (o.links && (!o.events || (!strstr(o.events, "send") && !strstr(o.events, "receive"))))
        return bmt_cli_usage_error(CMD, "--links links sends to receipts: give --events with "
                                   "send and receive");
    const struct bmt_record_sources *src = &o.sources;
    int any_source = src->samples || src->system_monitor || src->distribution || src->file_io ||
                     src->ets;
    if (o.call_count == 0 && !o.events && !any_source)
        return bmt_cli_usage_error(CMD, "nothing to trace: give --calls SPEC (e.g. "
                                   "'my_mod:handle_call/3 -> return'), --events LIST or a "
                                   "source (--samples, --system-monitor, --file-io, ...)");
    {
        char scratch[8192], err[512];
        if (bmt_record_sources_term(src, scratch, sizeof scratch, err, sizeof err) != 0)
            return bmt_cli_usage_error(CMD, "%s", err);
    }
    if (o.remote_dir && o.out)
        return bmt_cli_usage_error(CMD, "-o and --remote-dir exclude each other: the trace is "
                                   "copied here or left on the target");
    if (o.return_to && o.call_count == 0)
        return bmt_cli_usage_error(CMD, "--return-to needs --calls");
    if (o.events) {
        struct text scratch = {NULL, 0, 0, 0};
        char *bad = NULL;
        int bad_kind = add_kinds(&scratch, o.events, &bad) != 0;
        free(scratch.buf);
        if (bad_kind) {
            int rc = bmt_cli_usage_error(CMD, "--events: unknown event kind '%s' (procs, send, "
                                         "receive, running, garbage_collection, ports, call)",
                                         bad ? bad : "?");
            free(bad);
            return rc;
        }
    }

    char root[PATH_MAX];
    if (find_root(root, sizeof root) != 0) {
        bmt_cli_error(CMD ": cannot find beamtrace's ebin/ next to this command's priv/ (run "
                      "make, or set BEAMTRACE_ROOT to the directory holding ebin/ and priv/)");
        return BMT_EXIT_FAIL;
    }
    char cookie_from[PATH_MAX];
    char *cookie = read_cookie(o.cookie_file, cookie_from, sizeof cookie_from);
    if (!cookie)
        return BMT_EXIT_FAIL;
    char out[PATH_MAX];
    if (o.out) {
        if (o.out[0] == '/') {
            snprintf(out, sizeof out, "%s", o.out);
        } else {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd))
                snprintf(cwd, sizeof cwd, ".");
            if (path_format(out, sizeof out, "%s/%s", cwd, o.out) != 0) {
                free(cookie);
                return bmt_cli_usage_error(CMD, "-o: the path is too long");
            }
        }
        struct stat st;
        if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
            free(cookie);
            return bmt_cli_usage_error(CMD, "-o %s: exists and is not a directory", o.out);
        }
    } else if (!o.remote_dir && default_out(o.node, o.nodes || o.cluster, out, sizeof out) != 0) {
        free(cookie);
        return BMT_EXIT_FAIL;
    } else if (o.remote_dir) {
        out[0] = '\0';
    }

    struct screen screen = {isatty(STDERR_FILENO), 0, 0};
    struct text term = {NULL, 0, 0, 0};
    int rc = build_term(&term, &o, root, out, cookie_from, screen.tty);
    if (rc != 0 || term.failed) {
        free(cookie);
        free(term.buf);
        if (rc == 0)
            bmt_cli_error(CMD ": out of memory");
        return rc ? rc : BMT_EXIT_FAIL;
    }
    catch_signals();
    struct controller ctl;
    if (start_controller(&ctl, root, &o) != 0) {
        free(cookie);
        free(term.buf);
        return BMT_EXIT_FAIL;
    }
    /* The cookie and the options, through the pipe only. */
    size_t cookie_len = strlen(cookie);
    int wrote = write_all(ctl.in_fd, cookie, cookie_len) == 0 &&
                write_all(ctl.in_fd, "\n", 1) == 0 &&
                write_all(ctl.in_fd, term.buf, term.len) == 0;
    memset(cookie, 0, cookie_len);
    free(cookie);
    free(term.buf);
    (void)wrote; /* a controller that died early says why through its status */
    return run_controller(&ctl, &screen);
}
