#!/usr/bin/env python3
"""layering.py - no folder of lib/ includes from a folder above it.

Reads every .c/.h under lib/ and cli/ and every public header
include/ember/*.h, takes each `#include "..."` line, finds the folder the
included file belongs to, and checks it against the table below: a folder
may include its own headers and those of the folders it lists. cli/ may
include public headers and its own, and of lib/'s internal headers only
those in CLI_LIB_HEADERS. A public header may include only the public
headers of folders its own folder may include.

Prints each violation as `FILE:LINE: includes "X" (folder F), which G/ may
not include` and exits 1; prints a one-line summary and exits 0 when there
is none.

A header named *_impl.h is its floor's own: only files of that floor may
include it. A folder or public header the table does not list is an error
too (a new floor is added to the table, with what it may include, on
purpose).

Usage: tests/style/layering.py [ROOT]
ROOT is the repository (default: two folders above this script).
"""

import os
import re
import sys

# ---- the table (edit here) -------------------------------------------------
# Folders of lib/, bottom to top, and the folders each may include from (its
# own is always allowed). A subfolder (lib/read/perf) counts as its folder.
# The pipeline: inputs are read (read, on symbol, model, wire, base),
# rewritten (transform) and written (write); record makes perf.data; trace
# is the in-process tracing runtime, tracefile reads what it writes (and
# OCaml's runtime events), traceview shows it. ember/trace.h, the tracing
# runtime's public header, is the vocabulary (kinds, field types) of the
# ring file that tracefile decodes: it includes nothing.
LAYOUT = {
    "base": [],
    "wire": ["base"],
    "model": ["base"],
    "symbol": ["base", "model"],
    "read": ["base", "wire", "model", "symbol"],
    "transform": ["base", "model", "symbol", "read"],
    "write": ["base", "wire", "model"],
    "record": ["base", "wire", "model", "symbol"],
    "trace": ["wire"],
    "heap": ["wire"],
    "tracefile": ["base", "wire", "trace"],
    "traceview": ["base", "wire", "read", "trace", "tracefile"],
}

# Each public header include/ember/X.h, and the lib/ folder it belongs to.
PUBLIC_HEADERS = {
    "base.h": "base",
    "model.h": "model",
    "read.h": "read",
    "write.h": "write",
    "transform.h": "transform",
    "record.h": "record",
    "trace.h": "trace",
    "tracefile.h": "tracefile",
    "traceview.h": "traceview",
}

# The internal headers of lib/ that cli/ may include ("folder/file.h"):
# none; cli/ reads the library through include/ember/ alone.
CLI_LIB_HEADERS = []
# -----------------------------------------------------------------------------

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root, top):
    """The .c and .h files under root/top, sorted, relative to root."""
    found = []
    for here, dirs, files in os.walk(os.path.join(root, top)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                found.append(os.path.relpath(os.path.join(here, name), root))
    return found


class Layering:
    """The table: the folders each may include, the public headers' owners."""

    def __init__(self, root, allowed, owners):
        self.root, self.allowed, self.owners = root, allowed, owners

    def folder_of(self, path):
        """The table's folder of a file (relative to root), or None."""
        parts = path.split("/")
        if parts[0] == "lib" and len(parts) > 2:
            return parts[1]
        if parts[0] == "cli":
            return "cli"
        if parts[:2] == ["include", "ember"]:
            return self.owners.get(parts[2], "?" + parts[2])
        return None

    def unlisted(self, path):
        """The folder or public header path is in that the table lacks, or None."""
        folder = self.folder_of(path)
        if folder is None or folder == "cli" or folder in self.allowed:
            return None
        parts = path.split("/")
        return path if parts[0] == "include" else f"lib/{parts[1]}/"

    def resolve(self, src, name):
        """Where `#include "name"` in src leads: as the compiler looks
        (the file's folder, then lib/, then include/); a file that is not
        there (generated) is in src's folder."""
        for base in (os.path.dirname(src), "lib", "include"):
            path = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(os.path.join(self.root, path)):
                return path
        return os.path.join(os.path.dirname(src), name)

    def may_include(self, src, folder, target, path):
        if path.endswith("_impl.h"):  # a floor's private header: its own alone
            return folder == target
        if folder == target:
            return True
        if folder == "cli":
            return path.startswith("include/ember/") or (
                path.startswith("lib/") and path[4:] in CLI_LIB_HEADERS)
        return target in self.allowed.get(folder, [])

    def check(self, src):
        """The violations of one file, as lines to print."""
        folder = self.folder_of(src)
        out = []
        with open(os.path.join(self.root, src), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                path = self.resolve(src, m.group(1))
                target = self.folder_of(path)
                if target is None or self.may_include(src, folder, target, path):
                    continue
                out.append(f'{src}:{number}: includes "{m.group(1)}" (folder {target}), '
                           f"which {folder}/ may not include")
        return out


def main(argv):
    if len(argv) > 1 or any(a.startswith("-") for a in argv):
        sys.stderr.write(__doc__)
        return 2
    root = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
    table = Layering(root, LAYOUT, PUBLIC_HEADERS)
    files = sources(root, "lib") + sources(root, "cli") + sources(root, "include/ember")
    unknown = sorted({table.unlisted(f) for f in files} - {None})
    for name in unknown:
        print(f"{name}: not in the table")
    violations = [v for f in files if not table.unlisted(f) for v in table.check(f)]
    for v in violations:
        print(v)
    if violations or unknown:
        return 1
    print(f"layering: {len(files)} files, no include goes up a layer")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
