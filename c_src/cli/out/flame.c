/* Flame graphs drawn: where time goes per call stack, from the stacks
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
#include "flame.h"
#include "html.h"
#include "model/elixir.h"
#include "base/timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The SVG's geometry, px: a frame's row, the space for the title above the
 * frames, the margin around them. */
#define ROW 16
#define TOP 40
#define PAD 10

/* Appends frame `n`'s name; ';' and newlines become '_' (folded syntax). */
static void frame_name(const struct bmt_callstack *cs, uint32_t n, char *buf, size_t size)
{
    const struct bmt_cs_node *node = &cs->nodes[n];
    if (n == BMT_CS_OTHERS_NODE && node->is_proc)
        snprintf(buf, size, "[other processes]");
    else if (node->is_proc)
        bmt_callstack_label(cs, node->func, buf, size);
    else
        bmt_elixir_mfa(bmt_strtab_str(&cs->funcs, node->func),
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
        uint64_t pseudo[BMT_P_COUNT];
        uint64_t own = (bmt_flame_weights(cs, n, mode, pseudo) + unit_ns / 2) / unit_ns;
        int any = own > 0;
        for (int k = 0; k < BMT_P_COUNT; k++)
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
        for (int k = 0; k < BMT_P_COUNT; k++) {
            uint64_t v = (pseudo[k] + unit_ns / 2) / unit_ns;
            if (!v)
                continue;
            put_path(o, cs, path, depth);
            bmt_out_char(o, ';');
            bmt_out_str(o, bmt_flame_pseudo[k]);
            bmt_out_char(o, ' ');
            bmt_out_u64(o, v);
            bmt_out_char(o, '\n');
        }
    }
    free(path);
    return 0;
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
    char buf[600], d[32];
    double fx = (double)x / (double)all, fw = (double)w / (double)all;
    double px = PAD + fx * (width - 2 * PAD), pw = fw * (width - 2 * PAD);
    unsigned y = height - PAD - (dep + 1) * ROW;
    bmt_duration_text(w, d);
    snprintf(buf, sizeof buf, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-n=\"", fx, fw);
    bmt_out_str(o, buf);
    bmt_html_string(o, name, strlen(name));
    bmt_out_str(o, "\" style=\"cursor:pointer\"><title>");
    bmt_html_string(o, name, strlen(name));
    snprintf(buf, sizeof buf,
             " (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" "
             "fill=\"%s\" rx=\"2\"/><text x=\"%.2f\" y=\"%u\"></text></g>\n",
             d, 100.0 * fw, px, y, pw > 0.6 ? pw - 0.5 : 0.1, ROW - 1, col, px + 3, y + ROW - 4);
    bmt_out_str(o, buf);
}

static const char *const PSEUDO_COLORS[BMT_P_COUNT] = {"rgb(160,200,120)", "rgb(230,150,150)",
                                                   "rgb(150,180,230)", "rgb(180,180,200)"};

/* The <svg> element, its title, the reset button and the total. */
static void svg_head(struct bmt_out *o, const char *title, unsigned width, unsigned height,
                     uint64_t all, int standalone)
{
    char buf[1024], d[32];
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
    bmt_html_cstr(o, title);
    bmt_duration_text(all, d);
    snprintf(buf, sizeof buf,
             "</text>\n<text id=\"bmtreset\" x=\"%u\" y=\"22\" style=\"cursor:pointer\" "
             "fill=\"#336\">Reset zoom</text>\n<text x=\"%u\" y=\"22\" text-anchor=\"end\">"
             "traced time %s</text>\n",
             PAD, width - PAD, d);
    bmt_out_str(o, buf);
    if (all == 0) {
        snprintf(buf, sizeof buf, "<text x=\"%u\" y=\"%u\">no traced calls</text>\n", PAD,
                 TOP + ROW);
        bmt_out_str(o, buf);
    }
}

/* The depth-first walk drawing the tree: a stack of nodes to draw, each
 * with its left edge (ns from the left) and depth. */
struct walk {
    const struct bmt_callstack *cs;
    const struct bmt_flame_layout *l;
    enum bmt_flame_mode mode;
    uint32_t *stack, *depth_of;
    uint64_t *xs;
    unsigned sp;
    uint64_t all;               /* the root's width, ns */
    double min_ns;              /* narrower frames are left out */
    unsigned width, height;
};

/* Node `n` at `x`: its frame, its off-CPU frames above it at the left, and
 * its callees pushed (in reverse, so that the first is drawn first). */
static void draw_node(struct bmt_out *o, struct walk *w, uint32_t n, uint64_t x)
{
    const struct bmt_callstack *cs = w->cs;
    char name[1024], col[32];
    unsigned dep = w->depth_of[n];
    if (n == 0)
        snprintf(name, sizeof name, "all");
    else
        frame_name(cs, n, name, sizeof name);
    color(name, col);
    if (n == 0 || cs->nodes[n].is_proc)
        snprintf(col, sizeof col, n ? "rgb(150,170,210)" : "rgb(200,200,200)");
    frame_rect(o, name, col, x, w->l->total[n], w->all, dep, w->width, w->height);
    uint64_t pseudo[BMT_P_COUNT], cx = x;
    bmt_flame_weights(cs, n, w->mode, pseudo);
    for (int k = 0; k < BMT_P_COUNT; k++) {
        if ((double)pseudo[k] >= w->min_ns && pseudo[k] > 0)
            frame_rect(o, bmt_flame_pseudo[k], PSEUDO_COLORS[k], cx, pseudo[k], w->all, dep + 1,
                       w->width, w->height);
        cx += pseudo[k];
    }
    unsigned first = w->sp;
    for (uint32_t c = w->l->first_child[n]; c != BMT_CS_NONE; c = w->l->next_sibling[c]) {
        if ((double)w->l->total[c] >= w->min_ns && w->l->total[c] > 0) {
            w->stack[w->sp] = c;
            w->xs[w->sp++] = cx;
            w->depth_of[c] = dep + 1;
        }
        cx += w->l->total[c];
    }
    for (unsigned i = first, j = w->sp; i + 1 < j; i++, j--) {
        uint32_t t = w->stack[i];
        w->stack[i] = w->stack[j - 1];
        w->stack[j - 1] = t;
        uint64_t tx = w->xs[i];
        w->xs[i] = w->xs[j - 1];
        w->xs[j - 1] = tx;
    }
}

int bmt_flame_svg(struct bmt_out *o, const struct bmt_callstack *cs, const char *title,
                  unsigned width, int standalone, enum bmt_flame_mode mode)
{
    struct bmt_flame_layout l;
    int rc = bmt_flame_layout(cs, &l, mode);
    struct walk w = {cs, &l, mode, malloc((cs->node_count + 1) * sizeof *w.stack),
                     calloc(cs->node_count + 1, sizeof *w.depth_of),
                     malloc((cs->node_count + 1) * sizeof *w.xs), 0, 0, 0, width, 0};
    if (rc == 0 && w.stack && w.depth_of && w.xs) {
        w.all = l.total[0];
        w.min_ns = (double)w.all * 0.1 / (double)(width - 2 * PAD);
        w.height = TOP + (l.max_depth + 2) * ROW + PAD; /* + a row of off-CPU frames */
        svg_head(o, title, width, w.height, w.all, standalone);
        /* Depth-first: node 0 is "all" at the bottom row. */
        w.stack[w.sp] = 0;
        w.xs[w.sp++] = 0;
        while (w.all && w.sp) {
            w.sp--;
            draw_node(o, &w, w.stack[w.sp], w.xs[w.sp]);
        }
        bmt_out_str(o, "<script type=\"text/javascript\"><![CDATA[\n");
        bmt_out_str(o, FLAME_SCRIPT);
        bmt_out_str(o, "\n]]></script>\n</svg>\n");
    } else {
        rc = -ENOMEM;
    }
    bmt_flame_layout_free(&l);
    free(w.stack);
    free(w.depth_of);
    free(w.xs);
    return rc;
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
