/* `beamtrace flame`: where time goes per call stack, from the stacks
 * callstack.c rebuilds, as Brendan Gregg's folded stacks or a
 * self-contained interactive SVG flame graph.
 *
 * Widths (modes, enum bmt_flame_mode): by default a function's frame is as
 * wide as the time it ran on a CPU (its own plus its traced callees'), and
 * the time its process spent off CPU or collecting garbage while in it is
 * drawn as distinct frames on top, [runnable], [waiting] and [gc] (eflame's
 * SLEEP frames, split), so descheduled time is never charged to whatever
 * function the process was in. --on-cpu leaves the off-CPU frames out;
 * --off-cpu keeps only them. Time the trace cannot classify (no
 * process_scheduled events, or before a process's first one) stays with
 * the function: for a trace without scheduling events the graph is one of
 * wall time, and its title says so. In the default mode the counts sum to
 * the time spent inside root-level traced calls (unfinished calls counted
 * up to the process's exit or the end of the trace or window). The root
 * frame is the process ("<0.66.0> name") unless --merge-processes: Erlang
 * work is per process, and names make servers stand out; merging is there
 * for pools of identical workers. The call tree is aggregated by distinct
 * stack as the trace is read, bounded as callstack.h says.
 *
 * The SVG is written by hand: one <g> per stack (rect, text, <title>
 * tooltip), a small inline script zooms into a frame on click (ancestors
 * stretch to full width, others hide) and resets on the title. Frames
 * narrower than 0.1 px at full width are left out to bound the size.
 */
#include "model/analyses.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The off-CPU frames drawn on top of a stack's function, in order. */
enum { P_GC, P_RUNNABLE, P_WAITING, P_OFF, P_COUNT };
static const char *const PSEUDO[P_COUNT] = {"[gc]", "[runnable]", "[waiting]", "[off-cpu]"};

/* The width of node n's own frame and of its off-CPU frames, in `mode`. */
static uint64_t weights(const struct bmt_callstack *cs, uint32_t n, enum bmt_flame_mode mode,
                        uint64_t pseudo[P_COUNT])
{
    const struct bmt_cs_node *node = &cs->nodes[n];
    int split = cs->scope->receive_count > 0;
    memset(pseudo, 0, P_COUNT * sizeof *pseudo);
    if (n == 0)
        return 0; /* process nodes carry time only from calls pruned from a full tree */
    if (mode != BMT_FLAME_OFF_CPU)
        pseudo[P_GC] = node->self[BMT_K_GC];
    if (mode != BMT_FLAME_ON_CPU) {
        if (split) {
            pseudo[P_RUNNABLE] = bmt_kind_runnable(node->self);
            pseudo[P_WAITING] = node->self[BMT_K_WAITING];
        } else {
            pseudo[P_OFF] = bmt_kind_runnable(node->self) + node->self[BMT_K_WAITING];
        }
    }
    if (mode == BMT_FLAME_OFF_CPU)
        return 0;
    return node->self[BMT_K_ON_CPU] + (mode == BMT_FLAME_ALL ? node->self[BMT_K_UNKNOWN] : 0);
}

/* Appends frame `n`'s name; ';' and newlines become '_' (folded syntax). */
static void frame_name(const struct bmt_callstack *cs, uint32_t n, char *buf, size_t size)
{
    const struct bmt_cs_node *node = &cs->nodes[n];
    if (n == BMT_CS_OTHERS_NODE && node->is_proc)
        snprintf(buf, size, "[other processes]");
    else if (node->is_proc)
        bmt_callstack_label(cs, node->func, buf, size);
    else
        bmt_an_function(bmt_strtab_str(&cs->funcs, node->func),
                        bmt_strtab_len(&cs->funcs, node->func), buf, size);
    for (char *p = buf; *p; p++)
        if (*p == ';' || *p == '\n' || *p == '\r')
            *p = '_';
}

static void put_path(struct bmt_out *o, const struct bmt_callstack *cs, const uint32_t *path,
                     unsigned depth)
{
    char name[1024];
    while (depth--) {
        frame_name(cs, path[depth], name, sizeof name);
        bmt_out_str(o, name);
        if (depth)
            bmt_out_char(o, ';');
    }
}

int bmt_flame_folded(struct bmt_out *o, const struct bmt_callstack *cs, uint64_t unit_ns,
                     enum bmt_flame_mode mode)
{
    uint32_t *path = malloc((BMT_CS_MAX_DEPTH + 2) * sizeof *path);
    if (!path)
        return -ENOMEM;
    for (uint32_t n = 1; n < cs->node_count; n++) {
        uint64_t pseudo[P_COUNT];
        uint64_t own = (weights(cs, n, mode, pseudo) + unit_ns / 2) / unit_ns;
        int any = own > 0;
        for (int k = 0; k < P_COUNT; k++)
            any |= (pseudo[k] + unit_ns / 2) / unit_ns > 0;
        if (!any)
            continue;
        unsigned depth = 0;
        for (uint32_t m = n; m != 0 && depth < BMT_CS_MAX_DEPTH + 2; m = cs->nodes[m].parent)
            path[depth++] = m;
        if (own) {
            put_path(o, cs, path, depth);
            bmt_out_char(o, ' ');
            bmt_out_u64(o, own);
            bmt_out_char(o, '\n');
        }
        for (int k = 0; k < P_COUNT; k++) {
            uint64_t v = (pseudo[k] + unit_ns / 2) / unit_ns;
            if (!v)
                continue;
            put_path(o, cs, path, depth);
            bmt_out_char(o, ';');
            bmt_out_str(o, PSEUDO[k]);
            bmt_out_char(o, ' ');
            bmt_out_u64(o, v);
            bmt_out_char(o, '\n');
        }
    }
    free(path);
    return 0;
}

struct layout {
    uint32_t *first_child, *next_sibling;
    uint64_t *total;            /* per node: inclusive ns (proc and root summed) */
    unsigned max_depth;
};

static int make_layout(const struct bmt_callstack *cs, struct layout *l, enum bmt_flame_mode mode)
{
    uint32_t n = cs->node_count ? cs->node_count : 1;
    l->first_child = malloc(n * sizeof(uint32_t));
    l->next_sibling = malloc(n * sizeof(uint32_t));
    l->total = calloc(n, sizeof(uint64_t));
    if (!l->first_child || !l->next_sibling || !l->total)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        l->first_child[i] = l->next_sibling[i] = BMT_CS_NONE;
    /* Children in creation order: link from the last node backwards. */
    for (uint32_t i = cs->node_count; i-- > 1;) {
        uint32_t p = cs->nodes[i].parent;
        l->next_sibling[i] = l->first_child[p];
        l->first_child[p] = i;
    }
    /* Parents have smaller ids than children, so one backward sweep sums. */
    for (uint32_t i = cs->node_count; i-- > 1;) {
        uint64_t pseudo[P_COUNT];
        l->total[i] += weights(cs, i, mode, pseudo);
        for (int k = 0; k < P_COUNT; k++)
            l->total[i] += pseudo[k];
        l->total[cs->nodes[i].parent] += l->total[i];
    }
    l->max_depth = 0;
    for (uint32_t i = 1; i < cs->node_count; i++) {
        unsigned d = 0;
        for (uint32_t m = i; m != 0 && d <= BMT_CS_MAX_DEPTH + 1; m = cs->nodes[m].parent)
            d++;
        if (d > l->max_depth)
            l->max_depth = d;
    }
    return 0;
}

static void free_layout(struct layout *l)
{
    free(l->first_child);
    free(l->next_sibling);
    free(l->total);
}

static const char FLAME_SCRIPT[] =
    "(function(){var s=document.getElementById('bmtflame');if(!s)return;"
    "var W=+s.getAttribute('data-width'),P=10,gs=s.getElementsByClassName('f');"
    "function z(x0,w0){for(var i=0;i<gs.length;i++){var g=gs[i],x=+g.getAttribute('data-x'),"
    "w=+g.getAttribute('data-w');if(x+w<=x0+1e-12||x>=x0+w0-1e-12){g.style.display='none';"
    "continue;}g.style.display='';var a=Math.max(x,x0),b=Math.min(x+w,x0+w0),"
    "nx=P+(a-x0)/w0*(W-2*P),nw=(b-a)/w0*(W-2*P),r=g.getElementsByTagName('rect')[0],"
    "t=g.getElementsByTagName('text')[0];r.setAttribute('x',nx.toFixed(2));"
    "r.setAttribute('width',Math.max(nw-0.5,0.1).toFixed(2));t.setAttribute('x',(nx+3).toFixed(2));"
    "var n=g.getAttribute('data-n'),c=Math.floor((nw-6)/7);"
    "t.textContent=c<3?'':(n.length<=c?n:n.substring(0,c-2)+'..');}}"
    "for(var i=0;i<gs.length;i++){gs[i].addEventListener('click',function(e){"
    "z(+this.getAttribute('data-x'),+this.getAttribute('data-w'));e.stopPropagation();});}"
    "var r=s.getElementById?s.getElementById('bmtreset'):document.getElementById('bmtreset');"
    "if(r)r.addEventListener('click',function(){z(0,1);});z(0,1);})();";

static void color(const char *name, char out[32])
{
    uint64_t h = bmt_hash_bytes(name, strlen(name), 7);
    snprintf(out, 32, "rgb(%u,%u,%u)", 205 + (unsigned)(h % 50), (unsigned)((h >> 8) % 180) + 30,
             (unsigned)((h >> 16) % 55));
}

/* Draws one frame rect (fraction x, width w of `all`) at depth `dep`. */
static void frame_rect(struct bmt_out *o, const char *name, const char *col, uint64_t x, uint64_t w,
                       uint64_t all, unsigned dep, unsigned width, unsigned height)
{
    const unsigned row = 16, pad = 10;
    char buf[600], d[32];
    double fx = (double)x / (double)all, fw = (double)w / (double)all;
    double px = pad + fx * (width - 2 * pad), pw = fw * (width - 2 * pad);
    unsigned y = height - pad - (dep + 1) * row;
    bmt_an_duration_text(w, d);
    snprintf(buf, sizeof buf, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-n=\"", fx, fw);
    bmt_out_str(o, buf);
    bmt_an_html_string(o, name, strlen(name));
    bmt_out_str(o, "\" style=\"cursor:pointer\"><title>");
    bmt_an_html_string(o, name, strlen(name));
    snprintf(buf, sizeof buf,
             " (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" "
             "fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%u\"></text></g>\n",
             d, 100.0 * fw, px, y, pw > 0.6 ? pw - 0.5 : 0.1, row - 1, col, px + 3, y + row - 4);
    bmt_out_str(o, buf);
}

static const char *const PSEUDO_COLORS[P_COUNT] = {"rgb(160,200,120)", "rgb(230,150,150)",
                                                   "rgb(150,180,230)", "rgb(180,180,200)"};

int bmt_flame_svg(struct bmt_out *o, const struct bmt_callstack *cs, const char *title,
                  unsigned width, int standalone, enum bmt_flame_mode mode)
{
    struct layout l;
    int rc = make_layout(cs, &l, mode);
    uint32_t *stack = malloc((cs->node_count + 1) * sizeof *stack);
    uint64_t *xs = malloc((cs->node_count + 1) * sizeof *xs);
    if (rc < 0 || !stack || !xs) {
        free_layout(&l);
        free(stack);
        free(xs);
        return -ENOMEM;
    }
    const unsigned row = 16, top = 40, pad = 10;
    unsigned height = top + (l.max_depth + 2) * row + pad; /* + a row of off-CPU frames */
    uint64_t all = l.total[0];
    char buf[1024], name[1024], col[32], d[32];
    if (standalone)
        bmt_out_str(o, "<?xml version=\"1.0\" standalone=\"no\"?>\n");
    snprintf(buf, sizeof buf,
             "<svg id=\"bmtflame\" xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
             "width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" data-width=\"%u\" "
             "style=\"font-family:Verdana,sans-serif;font-size:12px\">\n"
             "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f8f8f0\"/>\n"
             "<text x=\"%u\" y=\"22\" text-anchor=\"middle\" font-size=\"16\">",
             width, height, width, height, width, width, height, width / 2);
    bmt_out_str(o, buf);
    bmt_an_html_string(o, title, strlen(title));
    bmt_an_duration_text(all, d);
    snprintf(buf, sizeof buf,
             "</text>\n<text id=\"bmtreset\" x=\"%u\" y=\"22\" style=\"cursor:pointer\" "
             "fill=\"#336\">Reset zoom</text>\n<text x=\"%u\" y=\"22\" text-anchor=\"end\">"
             "traced time %s</text>\n",
             pad, width - pad, d);
    bmt_out_str(o, buf);
    if (all == 0) {
        snprintf(buf, sizeof buf, "<text x=\"%u\" y=\"%u\">no traced calls</text>\n", pad,
                 top + row);
        bmt_out_str(o, buf);
    }
    /* Depth-first: node 0 is "all" at the bottom row. */
    double min_ns = (double)all * 0.1 / (double)(width - 2 * pad);
    unsigned sp = 0;
    stack[sp] = 0;
    xs[sp++] = 0;
    uint32_t *depth_of = calloc(cs->node_count + 1, sizeof *depth_of);
    if (!depth_of)
        goto oom;
    while (all && sp) {
        sp--;
        uint32_t n = stack[sp];
        uint64_t x = xs[sp];
        uint64_t w = l.total[n];
        if (n == 0)
            snprintf(name, sizeof name, "all");
        else
            frame_name(cs, n, name, sizeof name);
        unsigned dep = depth_of[n];
        color(name, col);
        if (n == 0 || cs->nodes[n].is_proc)
            snprintf(col, sizeof col, n ? "rgb(150,170,210)" : "rgb(200,200,200)");
        frame_rect(o, name, col, x, w, all, dep, width, height);
        /* Off-CPU frames at the left above the frame, then the callees. */
        uint64_t pseudo[P_COUNT], cx = x;
        weights(cs, n, mode, pseudo);
        for (int k = 0; k < P_COUNT; k++) {
            if ((double)pseudo[k] >= min_ns && pseudo[k] > 0)
                frame_rect(o, PSEUDO[k], PSEUDO_COLORS[k], cx, pseudo[k], all, dep + 1, width,
                           height);
            cx += pseudo[k];
        }
        /* Children left to right: push in reverse so the first pops first. */
        unsigned first = sp;
        for (uint32_t c = l.first_child[n]; c != BMT_CS_NONE; c = l.next_sibling[c]) {
            if ((double)l.total[c] >= min_ns && l.total[c] > 0) {
                stack[sp] = c;
                xs[sp++] = cx;
                depth_of[c] = dep + 1;
            }
            cx += l.total[c];
        }
        for (unsigned i = first, j = sp; i + 1 < j; i++, j--) {
            uint32_t t = stack[i];
            stack[i] = stack[j - 1];
            stack[j - 1] = t;
            uint64_t tx = xs[i];
            xs[i] = xs[j - 1];
            xs[j - 1] = tx;
        }
    }
    bmt_out_str(o, "<script type=\"text/javascript\"><![CDATA[\n");
    bmt_out_str(o, FLAME_SCRIPT);
    bmt_out_str(o, "\n]]></script>\n</svg>\n");
    free(depth_of);
    free_layout(&l);
    free(stack);
    free(xs);
    return 0;
oom:
    free_layout(&l);
    free(stack);
    free(xs);
    return -ENOMEM;
}

/* ---- the command ---- */

static int feed(void *ctx, const struct bmt_record *rec)
{
    return bmt_callstack_feed(ctx, rec);
}

struct opts {
    int folded, merge;
    enum bmt_flame_mode mode;
    uint64_t unit_ns;
    const char *out, *title;
    unsigned width;
};

static int parse_opt(void *ctx, int code, const char *arg)
{
    struct opts *o = ctx;
    switch (code) {
    case 'F': o->folded = 1; return 0;
    case 'm': o->merge = 1; return 0;
    case 'o': o->out = arg; return 0;
    case 't': o->title = arg; return 0;
    case 'C':
    case 'O':
        if (o->mode != BMT_FLAME_ALL)
            return bmt_cli_usage_error("flame", "--on-cpu and --off-cpu exclude each other");
        o->mode = code == 'C' ? BMT_FLAME_ON_CPU : BMT_FLAME_OFF_CPU;
        return 0;
    case 'u':
        if (strcmp(arg, "us") == 0)
            o->unit_ns = 1000;
        else if (strcmp(arg, "ns") == 0)
            o->unit_ns = 1;
        else
            return bmt_cli_usage_error("flame", "--unit takes us or ns, not '%s'", arg);
        return 0;
    case 'w': {
        char *end;
        long w = strtol(arg, &end, 10);
        if (*end || w < 200 || w > 100000)
            return bmt_cli_usage_error("flame", "--width takes 200..100000 pixels, not '%s'", arg);
        o->width = (unsigned)w;
        return 0;
    }
    default:
        return bmt_cli_usage_error("flame", "unknown option");
    }
}

/* The title's second half: what the widths are, and what the trace lacks. */
void bmt_flame_subtitle(const struct bmt_callstack *cs, enum bmt_flame_mode mode, char *buf,
                        size_t size)
{
    const struct bmt_an_scope *s = cs->scope;
    if (!s->sched_count) {
        snprintf(buf, size, "wall time (no process_scheduled events: record with the running "
                 "flag for on- and off-CPU time)");
        return;
    }
    const char *off = s->receive_count ? "[runnable] and [waiting]"
                                       : "[off-cpu] (no message_receive events to split it)";
    if (mode == BMT_FLAME_ON_CPU)
        snprintf(buf, size, "on-CPU time%s", s->gc_count ? ", [gc] frames" : "");
    else if (mode == BMT_FLAME_OFF_CPU)
        snprintf(buf, size, "off-CPU time: %s frames", off);
    else
        snprintf(buf, size, "on-CPU time, off-CPU time as %s frames%s", off,
                 s->gc_count ? ", [gc] frames" : "");
}

int bmt_cmd_flame(int argc, char **argv)
{
    static const struct option extra[] = {
        {"folded", no_argument, NULL, 'F'},
        {"merge-processes", no_argument, NULL, 'm'},
        {"on-cpu", no_argument, NULL, 'C'},
        {"off-cpu", no_argument, NULL, 'O'},
        {"unit", required_argument, NULL, 'u'},
        {"output", required_argument, NULL, 'o'},
        {"title", required_argument, NULL, 't'},
        {"width", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    struct opts opts = {0, 0, BMT_FLAME_ALL, 1000, NULL, NULL, 1200};
    const char *dir;
    struct bmt_an_scope scope;
    bmt_an_scope_init(&scope);
    int rc = bmt_an_parse_args("flame", argc, argv, extra, "o:", parse_opt, &opts, NULL, &scope,
                               &dir);
    if (rc || !dir) {
        bmt_an_scope_free(&scope);
        return rc;
    }
    struct bmt_reader r;
    struct bmt_callstack cs;
    struct bmt_an_pass pass;
    bmt_callstack_init(&cs, &scope);
    cs.tree = 1;
    cs.merge_processes = opts.merge;
    int status = BMT_EXIT_FAIL;
    bmt_an_reads(&scope, &bmt_fields_callstack);
    rc = bmt_an_run(&r, dir, &scope, feed, &cs, &pass);
    if (rc == 0 && bmt_callstack_finish(&cs, pass.end_ns) < 0) {
        rc = -ENOMEM;
        snprintf(r.error, sizeof r.error, "out of memory; free some memory");
    }
    struct bmt_out o;
    if (rc < 0) {
        status = bmt_an_fail("flame", dir, &r, rc);
    } else if (opts.mode != BMT_FLAME_ALL && !scope.sched_count) {
        status = bmt_cli_usage_error("flame", "%s needs process_scheduled events, which %s lacks "
                                     "(record with the running flag)",
                                     opts.mode == BMT_FLAME_ON_CPU ? "--on-cpu" : "--off-cpu", dir);
    } else if (bmt_an_out_open(&o, opts.out) == 0) {
        char title[600], sub[200];
        bmt_flame_subtitle(&cs, opts.mode, sub, sizeof sub);
        snprintf(title, sizeof title, "%s: %s", opts.title ? opts.title : "Flame graph", sub);
        rc = opts.folded ? bmt_flame_folded(&o, &cs, opts.unit_ns, opts.mode)
                         : bmt_flame_svg(&o, &cs, title, opts.width, 1, opts.mode);
        if (rc < 0)
            bmt_cli_error("out of memory; free some memory");
        status = bmt_an_out_close(&o, opts.out ? opts.out : "flame");
        if (rc < 0)
            status = BMT_EXIT_FAIL;
        if (scope.call_count == 0)
            bmt_reader_warn(&r, "%s: no function_call events%s: the flame graph is empty (trace "
                            "with the call flag and erlang:trace_pattern/3, return_trace in the "
                            "match spec)", dir, scope.windowed || scope.filtering ? " in the chosen "
                            "window and processes" : "");
        if (cs.pruned_calls || cs.pruned_processes)
            bmt_reader_warn(&r, "%s: the call tree reached %u stacks: %llu calls in new stacks were "
                            "charged to their callers, %llu processes drawn as [other processes]",
                            dir, cs.max_nodes, (unsigned long long)cs.pruned_calls,
                            (unsigned long long)cs.pruned_processes);
    }
    bmt_callstack_free(&cs);
    bmt_reader_close(&r);
    bmt_an_scope_free(&scope);
    return status;
}
