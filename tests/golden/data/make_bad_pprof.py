"""Writes tests/bad/pprof/: pprof profiles that are wrong in one way each,
for bad_input.py (and as fuzzing seeds). Protobuf is encoded by hand so
that wrong wire types can be written. Each file starts with valid fields
(sample_type, string_table), as a damaged real file would.

usage: python3 make_bad_pprof.py [OUTDIR]   (default: tests/bad/pprof)
"""
import gzip
import os
import sys


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def key(num, wire):
    return varint(num << 3 | wire)


def f_varint(num, v):
    return key(num, 0) + varint(v)


def f_len(num, data):
    return key(num, 2) + varint(len(data)) + data


def f_packed(num, values):
    return f_len(num, b"".join(varint(v) for v in values))


STRINGS = [b"", b"samples", b"count", b"main", b"work"]


def profile(strings=STRINGS, sample_types=((1, 2),), samples=(((2, 1), (5,)),),
            locations=((1, 1), (2, 2)), functions=((1, 3), (2, 4)), extra=b""):
    """sample_types (type, unit); samples (location ids leaf first, values);
    locations (id, function id); functions (id, name string)."""
    out = b"".join(f_len(1, f_varint(1, t) + f_varint(2, u)) for t, u in sample_types)
    out += b"".join(f_len(6, s) for s in strings)
    out += extra
    out += b"".join(f_len(2, f_packed(1, locs) + f_packed(2, vals)) for locs, vals in samples)
    out += b"".join(f_len(4, f_varint(1, i) + f_len(4, f_varint(1, fn))) for i, fn in locations)
    out += b"".join(f_len(5, f_varint(1, i) + f_varint(2, name)) for i, name in functions)
    return out


def cases():
    good = profile()
    yield "good.pb", good  # main;work 5: the others are this, damaged
    yield "truncated.pb", good[: len(good) - 7]
    yield "truncated.pb.gz", gzip.compress(good[: len(good) // 2 + 3], mtime=0)
    # a Sample written as a number instead of an embedded message
    yield "wrong-type-sample.pb", profile(extra=f_varint(2, 7))
    # location_id as a 64-bit fixed number (neither varint nor packed)
    yield "wrong-type-location-id.pb", profile(
        samples=(), extra=f_len(2, key(1, 1) + b"\x01\0\0\0\0\0\0\0" + f_packed(2, [5])))
    yield "location-id-out-of-range.pb", profile(samples=(((2, 99), (5,)),))
    yield "function-id-out-of-range.pb", profile(locations=((1, 1), (2, 7)))
    yield "string-index-out-of-range.pb", profile(functions=((1, 3), (2, 42)))
    yield "string-index-negative.pb", profile(sample_types=((1, -3),))
    yield "string-table-0.pb", profile(strings=[b"x"] + STRINGS[1:])
    yield "value-count.pb", profile(samples=(((2, 1), (5, 6)),))
    yield "duplicate-id.pb", profile(functions=((1, 3), (1, 4)))
    yield "no-sample-type.pb", profile(sample_types=())
    yield "long-varint.pb", profile(extra=key(12, 0) + b"\xff" * 11 + b"\x01")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "bad", "pprof")
    os.makedirs(out, exist_ok=True)
    for name, data in cases():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
