#!/usr/bin/env python3
"""Writes hostile inputs for the input-limit tests into a directory, in a second or two: gzip
bombs of "0,0,..." (a bare array and one inside an IOPDDL problem), whitespace around a valid
problem, and garbage. The bombs are concatenated gzip members, each one deflated block of
repeated text, so that gigabytes of output cost megabytes of file and no time to write.

Usage: make_hostile_inputs.py OUT_DIR VALID_PROBLEM.json [INFLATED_MIB]
"""
import gzip
import os
import sys

PIECE = 1 << 20  # inflated bytes per repeated member


def write_members(path, head, piece, count, tail):
    """gzip(head + piece * count + tail), written as members."""
    member = gzip.compress(piece, compresslevel=9, mtime=0)
    with open(path, "wb") as out:
        out.write(gzip.compress(head, mtime=0))
        for _ in range(count):
            out.write(member)
        out.write(gzip.compress(tail, mtime=0))


def main():
    out_dir, valid = sys.argv[1], sys.argv[2]
    mib = int(sys.argv[3]) if len(sys.argv) > 3 else 3072
    zeros = b"0," * (PIECE // 2)
    os.makedirs(out_dir, exist_ok=True)
    # '[' + '0,' * N + '0]': the bare bomb.
    write_members(os.path.join(out_dir, "bomb_array.json.gz"), b"[", zeros, mib, b"0]")
    # The same numbers as one node's costs in an IOPDDL problem.
    write_members(os.path.join(out_dir, "bomb_iopddl.json.gz"),
                  b'{"problem":{"name":"bomb","nodes":{"intervals":[[0,1]],"usages":[[0]],'
                  b'"costs":[[', zeros, mib,
                  b'0]]},"edges":{"nodes":[],"costs":[]}}}')
    # A valid problem inside MiBs of whitespace.
    with open(valid, "rb") as f:
        problem = f.read()
    spaces = gzip.compress(b" " * PIECE, compresslevel=9, mtime=0)
    with open(os.path.join(out_dir, "whitespace.json.gz"), "wb") as out:
        for _ in range(mib // 2):
            out.write(spaces)
        out.write(gzip.compress(problem, mtime=0))
        for _ in range(mib - mib // 2):
            out.write(spaces)
    # Garbage: a sparse file of 2 GiB that starts with bytes JSON cannot start with.
    with open(os.path.join(out_dir, "garbage.bin"), "wb") as out:
        out.write(b"\x7fELF\x02\x01\x01garbage")
        out.truncate(2 << 30)


if __name__ == "__main__":
    main()
