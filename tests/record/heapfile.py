#!/usr/bin/env python3
"""heapfile.py - an independent decoder of heap recordings (lib/wire/heap_format.h).

Reads the raw per-process files libember-heap.so writes (heap.PID.N) or an
archive of them back to back (`ember record --heap -o X.heap`): headers,
chunks, LEB128 varints, each thread's stream in chunk order, the streams
merged by sequence number, then replays allocations and frees. The C reader
(lib/read/heap*.c) is not used: this checks what the recorder wrote against
the format's text, not against another reading of it.

A process's result: per stack (the return addresses, and their function
names by the modules' symbol tables: `nm`), the allocations (count, bytes)
and what is still live at the end, plus the totals, the peak, whether END
was seen, and the frees of addresses no allocation gave (blocks from before
the recording, or from the parent before a fork).

Usage: heapfile.py FILE_OR_DIR... prints, per process, one line per stack:
`count bytes live_count live_bytes caller;...;allocating_function`.
"""

import os
import struct
import subprocess
import sys

MAGIC = 0x3150414548424D45
CHUNK_MAGIC = 0x4B4E4843
HEADER_SIZE = 4096
CHUNK_HEADER = 64
PAD, ALLOC, FREE, STACK, MODULE, TIME, END = range(7)


class Cut(Exception):
    """A record that runs past its chunk's `used` (the format is broken)."""


def varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf):
            raise Cut("varint past the end of the records")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, i
        shift += 7
        if shift >= 70:
            raise Cut("varint over 10 bytes")


class Process:
    def __init__(self, header):
        (self.magic, self.version, self.header_size, self.pid, self.ppid, self.chunk_size,
         self.flags, self.sample_bytes, self.seed, self.start_mono_ns, self.start_real_ns,
         self.chunks, self.streams, self.seq) = struct.unpack_from("<QIIIIIIQQQQIIQ", header, 0)
        self.exe = header[80:336].split(b"\0")[0].decode(errors="replace")
        self.stacks = {}      # id -> [return addresses]
        self.modules = []     # (bias, build_id hex, [(lo, hi)], path)
        self.events = []      # (seq, kind, address, size, stack id, time_ns)
        self.ends = []        # (how, seq counter)
        self.threads = set()


def unzigzag(prev, z):
    """The address a zigzag-coded difference z from prev names."""
    return (prev + ((z >> 1) ^ -(z & 1))) & 0xFFFFFFFFFFFFFFFF


def decode_records(p, buf, seq, time_ns, out):
    """The records of one chunk (buf: up to its `used`): the last seq and time."""
    i = 0
    addr = 0  # addresses are zigzag differences from the chunk's previous one
    while i < len(buf):
        tag = buf[i]
        i += 1
        if tag == PAD:
            break
        if tag in (ALLOC, FREE):
            delta, i = varint(buf, i)
            seq += delta
            if tag == ALLOC:
                size, i = varint(buf, i)
                sid, i = varint(buf, i)
                z, i = varint(buf, i)
                addr = unzigzag(addr, z)
                out.append((seq, ALLOC, addr, size, sid, time_ns))
            else:
                z, i = varint(buf, i)
                addr = unzigzag(addr, z)
                out.append((seq, FREE, addr, 0, 0, time_ns))
        elif tag == STACK:
            sid, i = varint(buf, i)
            n, i = varint(buf, i)
            pcs = []
            for _ in range(n):
                pc, i = varint(buf, i)
                pcs.append(pc)
            if sid in p.stacks:
                raise Cut(f"stack {sid} written twice")
            p.stacks[sid] = pcs
        elif tag == MODULE:
            bias, i = varint(buf, i)
            idlen = buf[i]
            build_id = buf[i + 1:i + 1 + idlen].hex()
            i += 1 + idlen
            nseg, i = varint(buf, i)
            segs = []
            for _ in range(nseg):
                lo, i = varint(buf, i)
                hi, i = varint(buf, i)
                segs.append((lo, hi))
            end = buf.index(b"\0", i)
            p.modules.append((bias, build_id, segs, buf[i:end].decode(errors="replace")))
            i = end + 1
        elif tag == TIME:
            time_ns, i = varint(buf, i)
        elif tag == END:
            how, i = varint(buf, i)
            count, i = varint(buf, i)
            p.ends.append((how, count))
        else:
            raise Cut(f"unknown tag {tag} at byte {i - 1} of a chunk")
    return seq, time_ns


def decode_process(data, off):
    """The process whose file starts at data[off]: (Process, its size in the archive)."""
    p = Process(data[off:off + HEADER_SIZE])
    if p.magic != MAGIC:
        raise Cut(f"no heap recording at byte {off} (magic {p.magic:#x})")
    streams = {}
    for k in range(p.chunks):
        c = off + HEADER_SIZE + k * p.chunk_size
        head = data[c:c + CHUNK_HEADER]
        if len(head) < CHUNK_HEADER:
            break  # cut short: the rest reads as unclaimed
        magic, tid, stream, index, used, first_seq, time_ns = struct.unpack_from("<IIIIQQQ", head)
        if magic != CHUNK_MAGIC:
            continue
        body = data[c + CHUNK_HEADER:c + CHUNK_HEADER + used]
        streams.setdefault(stream, []).append((index, first_seq, time_ns, body))
        p.threads.add(tid)
    for chunks in streams.values():
        chunks.sort()
        for index, first_seq, time_ns, body in chunks:
            decode_records(p, body, first_seq, time_ns, p.events)
    p.events.sort(key=lambda e: e[0])
    return p, HEADER_SIZE + p.chunks * p.chunk_size


def read_paths(paths):
    """Every process in the files (directories: their heap.* files), by start time."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(path, f) for f in os.listdir(path) if f.startswith("heap."))
        else:
            files.append(path)
    procs = []
    for f in files:
        with open(f, "rb") as fh:
            data = fh.read()
        off = 0
        while off + HEADER_SIZE <= len(data):
            p, size = decode_process(data, off)
            procs.append(p)
            off += size
    procs.sort(key=lambda p: p.start_mono_ns)
    return procs


def replay(p):
    """Per stack id: [count, bytes, live count, live bytes]; and the totals."""
    sites, live = {}, {}
    total = {"allocs": 0, "bytes": 0, "frees": 0, "unknown_frees": 0, "peak": 0, "peak_ns": 0}
    held = 0
    for seq, kind, addr, size, sid, t in p.events:
        if kind == ALLOC:
            if addr in live:
                raise Cut(f"seq {seq}: {addr:#x} allocated twice without a free")
            live[addr] = (size, sid)
            s = sites.setdefault(sid, [0, 0, 0, 0])
            s[0] += 1
            s[1] += size
            total["allocs"] += 1
            total["bytes"] += size
            held += size
            if held > total["peak"]:
                total["peak"], total["peak_ns"] = held, t
        elif addr in live:
            size, _ = live.pop(addr)
            held -= size
            total["frees"] += 1
        else:
            total["unknown_frees"] += 1
    for size, sid in live.values():
        sites[sid][2] += 1
        sites[sid][3] += size
    total["live"] = held
    return sites, total


_syms = {}


def symbols(path):
    """A module's function symbols, sorted: [(address, name)] (nm)."""
    if path not in _syms:
        out = subprocess.run(["nm", "-n", "--defined-only", path], capture_output=True,
                             text=True).stdout
        if not out.strip():
            out = subprocess.run(["nm", "-D", "-n", "--defined-only", path], capture_output=True,
                                 text=True).stdout
        syms = []
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TtWw":
                syms.append((int(parts[0], 16), parts[2]))
        _syms[path] = syms
    return _syms[path]


def name_of(p, pc):
    """The function holding return address pc (pc - 1: the call), or ?."""
    for bias, _, segs, path in p.modules:
        if any(lo <= pc - 1 < hi for lo, hi in segs):
            best = "?"
            for addr, name in symbols(path):
                if addr > pc - 1 - bias:
                    break
                best = name
            return best
    return "?"


def site_lines(p):
    """Per symbolized stack (root first): [count, bytes, live count, live bytes]."""
    sites, _ = replay(p)
    folded = {}
    for sid, v in sites.items():
        names = [name_of(p, pc) for pc in p.stacks.get(sid, [])]
        key = ";".join(reversed(names))
        acc = folded.setdefault(key, [0, 0, 0, 0])
        for i in range(4):
            acc[i] += v[i]
    return folded


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    for p in read_paths(argv[1:]):
        _, total = replay(p)
        print(f"# pid {p.pid} ppid {p.ppid} exe {p.exe} flags {p.flags} "
              f"sample_bytes {p.sample_bytes} ends {p.ends} {total}")
        for key, v in sorted(site_lines(p).items()):
            print(v[0], v[1], v[2], v[3], key)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
