/* Who a pid is: the names the trace gives each process, kept current as
 * the trace is read, for every analysis, export and the report.
 *
 * Sources: the recorder's state dump at session start
 * (org_erlang_beamtrace:process_info: registered name, initial call,
 * proc_lib label of every process alive then), process_spawn (a new
 * process's initial call) and process_register (a name taken later; an
 * unregistered process keeps showing its last name, which stays the most
 * useful label). A process is shown as "<0.66.0> NAME", NAME being its
 * registered name, else its label, else its initial call when that says
 * more than proc_lib:init_p/5, in Elixir's spelling for Elixir modules
 * (elixir.h). Every name a process ever had is kept, so `--pid NAME` and
 * `--name PATTERN` find it. In a cluster (node-qualified pids, nodes.h)
 * registered names are per node: a send to a name goes to its holder on
 * the sender's node, to {Name,Node} on Node. Memory: per process and per distinct name.
 * Single-threaded.
 */
#ifndef BMT_CLI_NAMES_H
#define BMT_CLI_NAMES_H

#include "ctf/nodes.h"
#include "ctf/reader.h"
#include "ctf/field_set.h"
#include "base/strtab.h"

#include <stdint.h>

#define BMT_NAME_NONE UINT32_MAX

struct bmt_pname {
    uint32_t reg;          /* current (or last) registered name, text id, or NONE */
    uint32_t label;        /* proc_lib label, text id, or NONE */
    uint32_t entry;        /* initial call, text id, or NONE */
};

struct bmt_names {
    struct bmt_strtab pids;    /* pid text -> pid id */
    struct bmt_strtab text;    /* names, labels and initial calls */
    struct bmt_pname *procs;   /* by pid id */
    uint32_t cap;
    struct bmt_u64map ever;    /* (pid id << 32 | text id) of every name held */
    uint64_t *ever_keys;       /* the same pairs, in order, for lookups by name */
    uint32_t ever_count, ever_cap;
    uint64_t dump_count;       /* process_info events seen */
    struct bmt_u64map holder;  /* (node text id + 1) << 32 | name text id -> pid id holding it now */
    /* The last pid looked up in the current event (its text's address and
     * length, its id): runs.c and the accumulators look up the same field
     * of the same event. bmt_names_event() forgets it at each event, so an
     * address reused by a later packet never answers. */
    const char *memo_str;
    size_t memo_len;
    int64_t memo_id;
};

/* A new event: the lookup memo holds nothing of the last one. */
static inline void bmt_names_event(struct bmt_names *n)
{
    n->memo_str = NULL;
}

void bmt_names_init(struct bmt_names *n);

/* Takes the names an event carries (process_info, process_spawn,
 * process_register; others are ignored). Returns 0 or -ENOMEM. */
int bmt_names_feed(struct bmt_names *n, const struct bmt_record *rec);

/* The fields bmt_names_feed reads (process_info, process_spawn,
 * process_register): what a pass that keeps names asks the reader for. */
extern const struct bmt_field_set bmt_names_fields;

/* The id of pid text `s`/`len`, created if new; or -ENOMEM. Inline for
 * the known pids (nearly every event names one); bmt_names_add_pid is
 * the rest. */
int64_t bmt_names_add_pid(struct bmt_names *n, const char *s, size_t len);
static inline __attribute__((always_inline)) int64_t
bmt_names_pid(struct bmt_names *n, const char *s, size_t len)
{
    if (s == n->memo_str && len == n->memo_len)
        return n->memo_id;
    int64_t id = bmt_strtab_lookup(&n->pids, s, len);
    id = id >= 0 && (uint32_t)id < n->cap ? id : bmt_names_add_pid(n, s, len);
    if (id >= 0) {
        n->memo_str = s;
        n->memo_len = len;
        n->memo_id = id;
    }
    return id;
}

/* The pid id of the process that holds, now, the registered name a send
 * from pid text `sender` to `to` (a name, or {Name,Node}) goes to: Name on
 * the sender's node, or on Node (cluster inputs, nodes.h); or -1. */
int64_t bmt_names_holder(const struct bmt_names *n, const char *sender, size_t sender_len,
                         const char *to, size_t len);

/* 1 when `s` is a pid text: OTP's "<0.1.0>" or node-qualified
 * "kv@h2/<0.1.0>" (nodes.h). */
static inline int bmt_names_is_pid(const char *s, size_t len)
{
    if (len && s[0] == '<')
        return 1;
    size_t p = bmt_nodes_prefix(s, len);
    return p && s[p + 1] == '<';
}

/* Writes "<0.66.0> NAME" (or just the pid) for pid text `pid` into `buf`. */
void bmt_names_label(const struct bmt_names *n, const char *pid, size_t len, char *buf,
                     size_t size);

/* Writes the display name of pid id `id` (without the pid) into `buf`, or
 * "" when it has none. */
void bmt_names_name(const struct bmt_names *n, uint32_t id, char *buf, size_t size);

/* Sets marks[id] = 1 (marks: one byte per pid id, n->pids.count of them)
 * for every process that ever had registered name or label `name` (exact,
 * or in its Elixir form), or, when `glob`, a registered name, label or
 * initial call matching the '*' pattern `name`. Time: one test per
 * distinct text, then linear in processes and names held. Returns 1 when
 * it matched a process, 0 when none, or -ENOMEM. */
int bmt_names_select(const struct bmt_names *n, const char *name, int glob, uint8_t *marks);

void bmt_names_free(struct bmt_names *n);

#endif
