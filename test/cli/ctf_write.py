#!/usr/bin/env python3
"""Writes one deterministic workload of beamtrace events as a CTF 1.8 trace
in a chosen layout, so the reader can be checked against babeltrace2 (view)
and against itself across layouts (every analysis must give the same
answer whatever the layout).

Layouts (--layout):
  beamtrace      beamtrace's recorder today: uint16 id + uint64 timestamp
  large          LTTng's "large" header: uint16 id + uint32 timestamp,
                 id 65535 -> extended uint32 id + uint64 timestamp (the
                 recorder's planned header)
  compact        LTTng's compact header: 5-bit id + 27-bit timestamp,
                 id 31 -> extended (bit-packed, align(8) struct)
Options: --big-endian, --contexts (LTTng's vpid/vtid/procname/ip stream
event context), --packetized (LTTng's packetized metadata), --id-base N
(first event id, to push ids into the extended header), --types (one more
event class with every field type: odd-sized and signed integers in bases
2/8/10/16, enumerations, floats, text and integer arrays and sequences,
nested structs, a variant), --padding (packets padded to a fixed size),
--events N, --streams N, --seed N.

Usage: ctf_write.py BEAMTRACE OUTDIR [options]   (BEAMTRACE: for `list`)
The workload: a state dump, spawns, registrations, nested calls with
returns and exceptions, scheduling, sends and receives, GC, exits, with
gaps long enough to need the extended headers.
"""
import argparse, json, random, struct, subprocess, sys, os, uuid as uuidlib

MAGIC = 0xC1FC1FC1


class Bits:
    """A bit writer: CTF 1.8 bit order (LSB first for little-endian fields,
    MSB first for big-endian ones), positions relative to the packet."""

    def __init__(self):
        self.buf = bytearray()
        self.pos = 0  # bits

    def align(self, a):
        if self.pos % a:
            self.put(0, a - self.pos % a, False)

    def put(self, v, size, be):
        v &= (1 << size) - 1
        need = (self.pos + size + 7) // 8
        if len(self.buf) < need:
            self.buf.extend(bytes(need - len(self.buf)))
        if self.pos % 8 == 0 and size % 8 == 0:
            self.buf[self.pos // 8:self.pos // 8 + size // 8] = v.to_bytes(size // 8, "big" if be else "little")
            self.pos += size
            return
        for i in range(size):
            bit = (v >> (size - 1 - i)) & 1 if be else (v >> i) & 1
            j = self.pos + i
            shift = 7 - j % 8 if be else j % 8
            if bit:
                self.buf[j // 8] |= 1 << shift
        self.pos += size

    def string(self, s):
        self.align(8)
        b = s.encode() + b"\0"
        self.buf.extend(bytes(self.pos // 8 + len(b) - len(self.buf)))
        self.buf[self.pos // 8:self.pos // 8 + len(b)] = b
        self.pos += 8 * len(b)


def workload(cat, rng, n_events, streams):
    """Events as (ts, stream, name, {field: value}), time-ordered."""
    by_name = {t["name"]: t for t in cat}
    D = "org_erlang_dyntrace:"
    ev = []
    ts = 1_000_000_000_000
    procs = [f"<0.{100 + i}.0>" for i in range(6)]
    names = {procs[0]: "my_server", procs[1]: "", procs[2]: "'Elixir.MyApp.Registry'"}
    mfas = ["my_mod:handle/2", "lists:seq/2", "'Elixir.MyApp.Worker':handle_call/3",
            "ets:lookup/2", "my_db:get/1"]

    def add(ev_name, s, **f):
        nonlocal ts
        ev.append((ts, s, ev_name, f))

    for p in procs:
        add("org_erlang_beamtrace:process_info", 0, pid=p, name=names.get(p, ""),
            entry="proc_lib:init_p/5" if p != procs[3] else "erlang:apply/2", label="")
        ts += 1000
    stacks = {p: [] for p in procs}
    running = {p: False for p in procs}
    gc = {p: False for p in procs}
    i = 0
    while len(ev) < n_events:
        i += 1
        r = rng.random()
        # Gaps: mostly small, some needing the extended compact (2^27 ns)
        # and large (2^32 ns) headers.
        g = rng.random()
        ts += rng.randrange(1, 3000) if g < 0.97 else rng.randrange(1 << 27, 1 << 28) if g < 0.995 \
            else rng.randrange(1 << 32, 1 << 33)
        p = rng.choice(procs)
        s = rng.randrange(streams)
        if r < 0.40:
            st = stacks[p]
            if st and (len(st) >= 5 or rng.random() < 0.45):
                f = st.pop()
                if rng.random() < 0.05:
                    add(D + "function_exception", s, pid=p, entry=f, **{"class": "error"})
                else:
                    add(D + "function_return", s, pid=p, entry=f, depth=0)
            else:
                f = rng.choice(mfas)
                st.append(f)
                add(D + "function_call", s, pid=p, entry=f, depth=0)
        elif r < 0.55:
            running[p] = not running[p]
            add(D + "process_scheduled", s, pid=p, entry=rng.choice(mfas),
                type="in" if running[p] else "out")
        elif r < 0.65:
            q = rng.choice(procs)
            add(D + "message_send", s, **{"from": p, "to": q, "message": "{req,%d}" % i})
        elif r < 0.73:
            add(D + "message_receive", s, to=p, message="{req,%d}" % i)
        elif r < 0.80:
            gc[p] = not gc[p]
            kind = "gc_minor_start" if gc[p] else "gc_minor_end"
            if gc[p]:
                add(D + kind, s, pid=p, need=rng.randrange(1 << 20), heap=610, old_heap=987)
            else:
                add(D + kind, s, pid=p, reclaimed=rng.randrange(1 << 20), heap=610, old_heap=987)
        elif r < 0.83:
            child = "<0.%d.0>" % (1000 + i)
            add(D + "process_spawn", s, pid=child, parent=p, entry="my_mod:worker/1")
            ts += 10
            add(D + "process_exit", s, pid=child, reason=rng.choice(["normal", "{shutdown,x}"]))
        elif r < 0.85:
            add(D + "process_register", s, pid=p, name="reg_%d" % (i % 7), type="register")
        elif r < 0.90:
            add(D + "user_trace_i4s4", s, pid=p, tag="t", i1=-i, i2=i, i3=-(1 << 62), i4=(1 << 62),
                s1="a", s2="", s3="c\n", s4="\u00e9")
        else:
            add(D + "port_scheduled", s, pid="#Port<0.%d>" % (i % 9), entry="command", type="in")
    for t, _, name, fields in ev:
        assert name in by_name, name
    return ev


def tsdl_int(size, signed=False, align=8, base=10, be=None, mp=None, enc=None):
    parts = [f"size = {size}", f"align = {align}", f"signed = {1 if signed else 0}"]
    if enc:
        parts.append(f"encoding = {enc}")
    parts.append(f"base = {base}")
    if be is not None:
        parts.append("byte_order = %s" % ("be" if be else "le"))
    if mp:
        parts.append(f"map = clock.{mp}.value")
    return "integer { " + "; ".join(parts) + "; }"


TYPES_EVENT = "test:types"


def types_fields():
    """The --types event class: TSDL lines and a value writer."""
    tsdl = """\t\t%s _u5;
\t\t%s _s13;
\t\t%s _h12;
\t\t%s _o7;
\t\t%s _b6;
\t\t%s _s48;
\t\tenum : %s { zero = 0, one = 1, low = 0 ... 9, "big one" = 100 ... 200 } _e;
\t\tfloating_point { exp_dig = 8; mant_dig = 24; align = 32; } _f32;
\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 64; } _f64;
\t\t%s _txt[8];
\t\t%s _n;
\t\t%s _seq[_n];
\t\t%s _tn;
\t\t%s _tseq[_tn];
\t\t%s _arr[3];
\t\tstruct { %s a; string b; } _nested;
\t\tenum : %s { num = 0, str = 1 } _tag;
\t\tvariant <_tag> { %s num; string str; } _var;
""" % (tsdl_int(5, align=1), tsdl_int(13, True, align=1), tsdl_int(12, align=1, base=16),
       tsdl_int(7, True, align=1, base=8), tsdl_int(6, align=1, base=2), tsdl_int(48, True),
       tsdl_int(8), tsdl_int(8, enc="UTF8"), tsdl_int(8), tsdl_int(16, True), tsdl_int(8),
       tsdl_int(8, enc="UTF8"), tsdl_int(32, base=16), tsdl_int(32), tsdl_int(8), tsdl_int(64, True))
    return tsdl


def write_types(b, be, k):
    """Values for the --types event number k (b: Bits)."""
    b.align(64)  # the struct takes its largest member alignment (f64)
    b.put(k % 32, 5, be)
    b.put(-(k % 4096), 13, be)
    b.put(0xABC ^ k, 12, be)
    b.put(-(k % 64), 7, be)
    b.put(k % 64, 6, be)
    b.align(8); b.put(-(1 << 40) + k, 48, be)
    b.put([0, 1, 5, 150, 250][k % 5], 8, be)
    b.align(32); b.put(struct.unpack(">I" if be else "<I", struct.pack(">f" if be else "<f", 1.5 + k))[0], 32, be)
    b.align(64); b.put(struct.unpack(">Q" if be else "<Q", struct.pack(">d" if be else "<d", -2.25e-3 * k))[0], 64, be)
    txt = ("tx%d" % k).encode()[:8]
    for i in range(8):
        b.put(txt[i] if i < len(txt) else 0, 8, be)
    n = k % 4
    b.put(n, 8, be)
    for i in range(n):
        b.align(8); b.put(-i * 300, 16, be)
    t = ("seq%d" % k).encode()
    b.put(len(t), 8, be)
    for c in t:
        b.put(c, 8, be)
    for i in range(3):
        b.align(8); b.put(0xdead0000 + i, 32, be)
    b.align(8); b.put(k, 32, be)
    b.string("nested %d" % k)
    tag = k % 2
    b.put(tag, 8, be)
    if tag == 0:
        b.align(8); b.put(-k, 64, be)
    else:
        b.string("var %d" % k)


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("beamtrace")
    ap.add_argument("out")
    ap.add_argument("--layout", choices=["beamtrace", "large", "compact"], default="beamtrace")
    ap.add_argument("--big-endian", action="store_true")
    ap.add_argument("--contexts", action="store_true")
    ap.add_argument("--packetized", action="store_true")
    ap.add_argument("--padding", action="store_true")
    ap.add_argument("--types", action="store_true")
    ap.add_argument("--id-base", type=int, default=0)
    ap.add_argument("--header-align", type=int, default=8,
                    help="align(N) of the named event header struct, in bits")
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--streams", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    return ap.parse_args()


def event_header_tsdl(a):
    """The event header's TSDL for the layout, and its type's name."""
    if a.layout == "beamtrace":
        return ("struct event_header {\n\tuint16_t id;\n\tuint64_clock_monotonic_t timestamp;\n} align(%d);\n" % a.header_align,
                "struct event_header")
    if a.layout == "compact":
        return ("struct event_header_compact {\n\tenum : uint5_t { compact = 0 ... 30, extended = 31 } id;\n\tvariant <id> {\n\t\tstruct {\n\t\t\tuint27_clock_monotonic_t timestamp;\n\t\t} compact;\n\t\tstruct {\n\t\t\tuint32_t id;\n\t\t\tuint64_clock_monotonic_t timestamp;\n\t\t} extended;\n\t} v;\n} align(%d);\n" % a.header_align,
                "struct event_header_compact")
    return ("struct event_header_large {\n\tenum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;\n\tvariant <id> {\n\t\tstruct {\n\t\t\tuint32_clock_monotonic_t timestamp;\n\t\t} compact;\n\t\tstruct {\n\t\t\tuint32_t id;\n\t\t\tuint64_clock_monotonic_t timestamp;\n\t\t} extended;\n\t} v;\n} align(%d);\n" % a.header_align,
            "struct event_header_large")


def metadata_text(a, classes, ids, trace_uuid):
    be = a.big_endian
    m = ["/* CTF 1.8 */", ""]
    m.append("typealias integer { size = 8; align = 8; signed = false; } := uint8_t;")
    m.append("typealias integer { size = 16; align = 8; signed = false; } := uint16_t;")
    m.append("typealias integer { size = 32; align = 8; signed = false; } := uint32_t;")
    m.append("typealias integer { size = 64; align = 8; signed = false; } := uint64_t;")
    m.append("typealias integer { size = 64; align = 8; signed = false; } := unsigned long;")
    m.append("typealias integer { size = 5; align = 1; signed = false; } := uint5_t;")
    m.append("typealias integer { size = 27; align = 1; signed = false; } := uint27_t;")
    m.append("")
    m.append("trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = %s;" % (trace_uuid, "be" if be else "le"))
    m.append("\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n")
    m.append("env {\n\thostname = \"writer-host\";\n\tdomain = \"ust\";\n\ttracer_name = \"lttng-ust\";\n\ttracer_major = 2;\n\ttracer_minor = 13;\n};\n")
    m.append("clock {\n\tname = \"monotonic\";\n\tuuid = \"%s\";\n\tdescription = \"Monotonic Clock\";\n\tfreq = 1000000000;\n\toffset = 1700000000123456789;\n};\n" % uuidlib.UUID(int=17))
    for sz in (27, 32, 64):
        m.append("typealias integer {\n\tsize = %d; align = %d; signed = false;\n\tmap = clock.monotonic.value;\n} := uint%d_clock_monotonic_t;\n" % (sz, 1 if sz == 27 else 8, sz))
    m.append("struct packet_context {\n\tuint64_clock_monotonic_t timestamp_begin;\n\tuint64_clock_monotonic_t timestamp_end;\n\tuint64_t content_size;\n\tuint64_t packet_size;\n\tuint64_t packet_seq_num;\n\tunsigned long events_discarded;\n\tuint32_t cpu_id;\n};\n")
    header, hdr = event_header_tsdl(a)
    m.append(header)
    m.append("stream {\n\tid = 0;\n\tevent.header := %s;\n\tpacket.context := struct packet_context;" % hdr)
    if a.contexts:
        m.append("\tevent.context := struct {\n\t\t%s _vpid;\n\t\t%s _vtid;\n\t\t%s _procname[17];\n\t\t%s _ip;\n\t};" % (
            tsdl_int(32, True), tsdl_int(32, True), tsdl_int(8, True, enc="UTF8"), tsdl_int(64, base=16)))
    m.append("};\n")
    for name, fields in classes:
        m.append("event {\n\tname = \"%s\";\n\tid = %d;\n\tstream_id = 0;\n\tloglevel = 13;\n\tfields := struct {" % (name, ids[name]))
        if fields is None:
            m.append(types_fields().rstrip("\n"))
        else:
            for f in fields:
                t = {"string": "string", "u32": tsdl_int(32), "u64": tsdl_int(64),
                     "s64": tsdl_int(64, True)}[f["type"]]
                m.append("\t\t%s _%s;" % (t, f["name"]))
        m.append("\t};\n};\n")
    return "\n".join(m).encode()


def write_metadata(a, text, trace_uuid):
    """Plain text, or (--packetized) in 4 KiB metadata packets."""
    with open(os.path.join(a.out, "metadata"), "wb") as f:
        if not a.packetized:
            f.write(text)
            return
        chunk = 4096 - 37
        fmt = ">" if a.big_endian else "<"
        for off in range(0, len(text), chunk):
            body = text[off:off + chunk]
            content = (37 + len(body)) * 8
            f.write(struct.pack(fmt + "I", 0x75D11D57) + trace_uuid.bytes +
                    struct.pack(fmt + "IIIBBBBB", 0, content, 4096 * 8, 0, 0, 0, 1, 8))
            f.write(body + bytes(4096 - 37 - len(body)))


def put_event(b, a, s, eid, ts, full_ts, fields, f):
    """One event of stream s: its header in the layout, contexts, fields."""
    be = a.big_endian
    b.align(max(8, a.header_align))
    if a.layout == "beamtrace":
        b.put(eid, 16, be); b.put(ts, 64, be)
    elif a.layout == "compact":
        if eid < 31 and not full_ts:
            b.put(eid, 5, be); b.put(ts & ((1 << 27) - 1), 27, be)
        else:
            b.put(31, 5, be); b.align(8); b.put(eid, 32, be); b.put(ts, 64, be)
    else:
        if eid < 65535 and not full_ts:
            b.put(eid, 16, be); b.put(ts & 0xffffffff, 32, be)
        else:
            b.put(65535, 16, be); b.put(eid, 32, be); b.put(ts, 64, be)
    if a.contexts:
        b.align(8); b.put(4242, 32, be); b.put(4243 + s, 32, be)
        pn = b"beam.smp"
        for k in range(17):
            b.put(pn[k] if k < len(pn) else 0, 8, be)
        b.put(0x7f0012345678 + eid, 64, be)
    if fields is None:
        write_types(b, be, f["k"])
        return
    for fd in fields:
        v = f[fd["name"]]
        if fd["type"] == "string":
            b.string(v)
        else:
            b.align(8); b.put(v, 32 if fd["type"] == "u32" else 64, be)


def write_stream(a, s, events, ids, fields_of, trace_uuid, packet_bytes=2048):
    """Stream s's events in packets of about packet_bytes."""
    be = a.big_endian
    mine = [e for e in events if e[1] == s]
    out = bytearray()
    seq = 0
    i = 0
    prev_ts = None
    limit = 1 << 27 if a.layout == "compact" else 1 << 32
    while i < len(mine):
        b = Bits()
        b.put(MAGIC, 32, be)
        for c in trace_uuid.bytes:
            b.put(c, 8, be)
        b.put(0, 32, be)
        b.put(s, 64, be)
        ctx_at = b.pos // 8
        b.put(0, 64 * 6, be)  # times, sizes, seq, discarded: patched below
        b.put(s, 32, be)
        begin = mine[i][0]
        last = begin
        first = i
        # Events until the packet is full (always at least one).
        while i < len(mine):
            ts, _, name, f = mine[i]
            save = (bytes(b.buf), b.pos)
            put_event(b, a, s, ids[name], ts, prev_ts is None or ts - prev_ts >= limit,
                      fields_of[name], f)
            if (b.pos + 7) // 8 > packet_bytes and i > first:
                b.buf = bytearray(save[0]); b.pos = save[1]  # full: next packet
                break
            prev_ts = ts
            last = ts
            i += 1
        content = b.pos
        size_bytes = max(packet_bytes, (content + 7) // 8) if a.padding else (content + 7) // 8
        del b.buf[(content + 7) // 8:]
        b.buf.extend(bytes(size_bytes - len(b.buf)))
        fmt = ">" if be else "<"
        struct.pack_into(fmt + "QQQQQQ", b.buf, ctx_at, begin, last, content, size_bytes * 8, seq, 0)
        out += b.buf
        seq += 1
    with open(os.path.join(a.out, "channel0_%d" % s), "wb") as f:
        f.write(out)


def main():
    a = parse_args()
    cat = json.loads(subprocess.run([a.beamtrace, "list", "--format", "json"], check=True,
                                    capture_output=True).stdout)["tracepoints"]
    rng = random.Random(a.seed)
    events = workload(cat, rng, a.events, a.streams)
    classes = [(t["name"], t["fields"]) for t in cat]
    if a.types:
        classes.append((TYPES_EVENT, None))
        # Sprinkle the types event in.
        extra = []
        for k, e in enumerate(events[::37]):
            extra.append((e[0], e[1], TYPES_EVENT, {"k": k}))
        events = sorted(events + extra, key=lambda e: e[0])
    ids = {name: a.id_base + i for i, (name, _) in enumerate(classes)}
    trace_uuid = uuidlib.UUID(int=random.Random(a.seed * 3 + 1).getrandbits(128))
    os.makedirs(a.out, exist_ok=True)
    write_metadata(a, metadata_text(a, classes, ids, trace_uuid), trace_uuid)
    fields_of = {name: fields for name, fields in classes}
    for s in range(a.streams):
        write_stream(a, s, events, ids, fields_of, trace_uuid)


main()
