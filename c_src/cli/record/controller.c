/* The live client of `beamtrace record` (contract in record.h): the
 * cookie, beamtrace's files, the trace directory, and the controller: a
 * hidden `erl` node running beamtrace_record (src/beamtrace_record.erl),
 * which does the distribution work (connecting, TLS distribution too, as
 * any erl: -proto_dist and -ssl_dist_optfile are passed through; checking
 * the target, shipping beamtrace, recording with the guard rails, copying
 * the trace back and removing what it shipped). The line protocol between
 * the two is in record.h.
 *
 * Ctrl-C (SIGINT, and SIGTERM, SIGHUP) writes `stop` to the controller: it
 * stops the trace, copies it back and cleans up; while shipping, it undoes
 * what it shipped and exits 130. A second Ctrl-C kills the controller: the
 * agent on the target then removes everything when the connection drops.
 * The controller runs in its own process group, so the terminal's Ctrl-C
 * reaches this process only; if this process dies, the controller reads
 * end of file and cleans up the same way.
 */
#define _GNU_SOURCE
#include "record.h"
#include "base/diag.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CMD "record"

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

/* ---- the cookie ---- */

/* Reads the cookie: --cookie-file, $BEAMTRACE_COOKIE, ~/.erlang.cookie.
 * Returns a malloc'ed string (trailing white space cut) or NULL after
 * printing the error; *from names the source for messages. */
static char *read_cookie(const char *cmd, const char *file, char *from, size_t from_size)
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
            bmt_cli_error("%s: no cookie: give --cookie-file FILE or set BEAMTRACE_COOKIE", cmd);
            return NULL;
        }
        snprintf(path, sizeof path, "%s/.erlang.cookie", home);
        file = path;
    }
    snprintf(from, from_size, "%s", file);
    FILE *f = fopen(file, "r");
    if (!f) {
        bmt_cli_error("%s: cannot read the cookie from %s: %s (give --cookie-file FILE or "
                      "set BEAMTRACE_COOKIE)", cmd, file, strerror(errno));
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
        bmt_cli_error("%s: the cookie in %s is %s", cmd, file,
                      n ? "more than one line" : "empty");
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
static int start_controller(struct controller *c, const char *root, const struct bmt_record_args *o)
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
    const char *cmd;  /* the command's name, for its error lines */
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
        bmt_cli_error("%s: %s", s->cmd, line + 6);
    } else if (strncmp(line, "line ", 5) == 0) {
        fprintf(stdout, "%s\n", line + 5);
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
            return BMT_RECORD_INTERRUPTED;
        }
        bmt_cli_error(CMD ": the controller node (erl) died of signal %d", WTERMSIG(status));
        return BMT_EXIT_FAIL;
    }
    /* 127: erl could not be run (the child said why). */
    return WEXITSTATUS(status) == 127 ? BMT_EXIT_FAIL : WEXITSTATUS(status);
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

static int talk(const char *root, const struct bmt_record_args *o, struct bmt_text *term,
                char *cookie, struct screen *screen);

int bmt_record_run(const struct bmt_record_args *o)
{
    char root[PATH_MAX];
    if (find_root(root, sizeof root) != 0) {
        bmt_cli_error(CMD ": cannot find beamtrace's ebin/ next to this command's priv/ (run "
                      "make, or set BEAMTRACE_ROOT to the directory holding ebin/ and priv/)");
        return BMT_EXIT_FAIL;
    }
    char cookie_from[PATH_MAX];
    char *cookie = read_cookie(CMD, o->cookie_file, cookie_from, sizeof cookie_from);
    if (!cookie)
        return BMT_EXIT_FAIL;
    char out[PATH_MAX];
    if (o->out) {
        if (o->out[0] == '/') {
            snprintf(out, sizeof out, "%s", o->out);
        } else {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd))
                snprintf(cwd, sizeof cwd, ".");
            if (path_format(out, sizeof out, "%s/%s", cwd, o->out) != 0) {
                free(cookie);
                return bmt_cli_usage_error(CMD, "-o: the path is too long");
            }
        }
        struct stat st;
        if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
            free(cookie);
            return bmt_cli_usage_error(CMD, "-o %s: exists and is not a directory", o->out);
        }
    } else if (!o->remote_dir && default_out(o->node, o->nodes || o->cluster, out, sizeof out) != 0) {
        free(cookie);
        return BMT_EXIT_FAIL;
    } else if (o->remote_dir) {
        out[0] = '\0';
    }

    struct screen screen = {CMD, isatty(STDERR_FILENO), 0, 0};
    struct bmt_text term = {NULL, 0, 0, 0};
    int rc = bmt_record_term(&term, o, root, out, cookie_from, screen.tty);
    if (rc != 0 || term.failed) {
        free(cookie);
        free(term.buf);
        if (rc == 0)
            bmt_cli_error(CMD ": out of memory");
        return rc ? rc : BMT_EXIT_FAIL;
    }
    return talk(root, o, &term, cookie, &screen);
}

/* Starts the controller, writes it the cookie (then wiped) and the options
 * term, relays its output. Frees `cookie` and term->buf. Returns the exit
 * status. */
static int talk(const char *root, const struct bmt_record_args *o, struct bmt_text *term,
                char *cookie, struct screen *screen)
{
    catch_signals();
    struct controller ctl;
    if (start_controller(&ctl, root, o) != 0) {
        free(cookie);
        free(term->buf);
        return BMT_EXIT_FAIL;
    }
    /* The cookie and the options, through the pipe only. */
    size_t cookie_len = strlen(cookie);
    int wrote = write_all(ctl.in_fd, cookie, cookie_len) == 0 &&
                write_all(ctl.in_fd, "\n", 1) == 0 &&
                write_all(ctl.in_fd, term->buf, term->len) == 0;
    memset(cookie, 0, cookie_len);
    free(cookie);
    free(term->buf);
    (void)wrote; /* a controller that died early says why through its status */
    return run_controller(&ctl, screen);
}

/* -o DIR made absolute into out (PATH_MAX); "" when not given. Returns 0,
 * or the usage error's status after its line. */
static int absolute_out(const char *cmd, const char *given, char *out, size_t size)
{
    out[0] = '\0';
    if (!given)
        return 0;
    if (given[0] == '/') {
        snprintf(out, size, "%s", given);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            snprintf(cwd, sizeof cwd, ".");
        if (path_format(out, size, "%s/%s", cwd, given) != 0)
            return bmt_cli_usage_error(cmd, "-o: the path is too long");
    }
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode))
        return bmt_cli_usage_error(cmd, "-o %s: exists and is not a directory", given);
    return 0;
}

int bmt_record_run_action(const struct bmt_record_args *o, enum bmt_record_action action)
{
    static const char *const names[] = {"flights", "fetch", "stop", "snapshot"};
    const char *cmd = names[action];
    char root[PATH_MAX], out[PATH_MAX], cookie_from[PATH_MAX];
    if (find_root(root, sizeof root) != 0) {
        bmt_cli_error("%s: cannot find beamtrace's ebin/ next to this command's priv/ (run "
                      "make, or set BEAMTRACE_ROOT to the directory holding ebin/ and priv/)",
                      cmd);
        return BMT_EXIT_FAIL;
    }
    int rc = absolute_out(cmd, o->out, out, sizeof out);
    if (rc != 0)
        return rc;
    char *cookie = read_cookie(cmd, o->cookie_file, cookie_from, sizeof cookie_from);
    if (!cookie)
        return BMT_EXIT_FAIL;
    struct screen screen = {cmd, isatty(STDERR_FILENO), 0, 0};
    struct bmt_text term = {NULL, 0, 0, 0};
    bmt_record_action_term(&term, o, action, out, cookie_from, screen.tty);
    if (term.failed) {
        free(cookie);
        free(term.buf);
        bmt_cli_error("%s: out of memory", cmd);
        return BMT_EXIT_FAIL;
    }
    return talk(root, o, &term, cookie, &screen);
}
