#!/usr/bin/env python3
"""check_index.py TRACE_DIR...: the relayd wrote, for every packet of every
stream file, an index entry (index/<stream>.idx, CTF index 1.1, big endian)
that agrees with the packet: offset, packet and content size, begin and end
times, events discarded, packet sequence number. The entries come from our
SEND_INDEX commands and the packets from our data connection, so this checks
the two halves of the protocol against each other through LTTng's own
writer. Prints one line per stream; exits 1 on the first disagreement.
"""
import glob
import os
import struct
import sys

INDEX_MAGIC = 0xC1F1DCC1
PKT_HEADER_BYTES = 84


def packets(data):
    """(offset, packet bits, content bits, ts_begin, ts_end, discarded, seq)."""
    off = 0
    while off + PKT_HEADER_BYTES <= len(data):
        tsb, tse, content, size, seq, disc = struct.unpack_from("<6Q", data, off + 32)
        if size == 0 or size % 8:
            raise ValueError(f"packet at {off}: size {size} bits")
        yield (off, size, content, tsb, tse, disc, seq)
        off += size // 8
    if off != len(data):
        raise ValueError(f"{len(data) - off} bytes after the last packet")


def entries(index):
    magic, major, minor, entry_len = struct.unpack_from(">4I", index, 0)
    if magic != INDEX_MAGIC or (major, minor) != (1, 1) or entry_len < 72:
        raise ValueError(f"header {magic:#x} {major}.{minor} entries of {entry_len} bytes")
    for off in range(16, len(index) - entry_len + 1, entry_len):
        e = struct.unpack_from(">9Q", index, off)
        # offset, packet_size, content_size, ts_begin, ts_end, discarded, seq
        yield e[:6] + (e[8],)


def main(dirs):
    for d in dirs:
        streams = sorted(glob.glob(os.path.join(d, "channel0_*")))
        if not streams:
            print(f"{d}: no stream file")
            return 1
        for f in streams:
            name = os.path.basename(f)
            try:
                with open(f, "rb") as fh:
                    pk = list(packets(fh.read()))
                with open(os.path.join(d, "index", name + ".idx"), "rb") as fh:
                    ix = list(entries(fh.read()))
            except (OSError, ValueError, struct.error) as e:
                print(f"{f}: {e}")
                return 1
            if len(pk) != len(ix):
                print(f"{f}: {len(pk)} packets, {len(ix)} index entries")
                return 1
            for p, e in zip(pk, ix):
                if p != e:
                    print(f"{f}: packet {p} indexed as {e}")
                    return 1
            print(f"{name}: {len(pk)} packets, index agrees")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
