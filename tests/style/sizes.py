#!/usr/bin/env python3
"""sizes.py - every file of lib/, cli/ and include/ small enough to read in
one sitting (at most MAX_LINES lines), every function short enough to hold
in one's head (at most MAX_FUNCTION lines, from its opening line to its
closing brace).

A function is what clang-format's style (BreakBeforeBraces: Linux) makes
of one: a line at column 0 that is not a declaration of a type or data,
whose '{' opens at column 0 of the next line (or ends the line), up to the
first '}' at column 0. Prints each file or function over its limit as
`FILE:LINE: ...` and exits 1; prints a summary and exits 0.

Usage: tests/style/sizes.py [ROOT]   (default: two folders above this script)
"""

import os
import re
import sys

MAX_LINES = 600
MAX_FUNCTION = 80
FOLDERS = ("lib", "cli", "include")
NOT_FUNCTION = re.compile(r"^(struct|union|enum|typedef|#|static const|const)\b|=")


def sources(root):
    for top in FOLDERS:
        for here, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(here, name), root)


def functions(lines):
    """(first line number, length, head) of each function's body."""
    start = None
    for i, line in enumerate(lines):
        if start is None and line.startswith("{") and i > 0 and ")" in lines[i - 1]:
            first = i - 1  # a signature over several lines: back to its first
            while first > 0 and lines[first][:1].isspace() and i - first < 8:
                first -= 1
            head = lines[first]
            if head[:1].strip() and not NOT_FUNCTION.match(head):
                start = first
        elif start is not None and line.startswith("}"):
            yield start + 1, i - start + 1, lines[start].strip()
            start = None


def main(argv):
    root = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
    problems, files, count = [], 0, 0
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        files += 1
        if len(lines) - 1 > MAX_LINES:
            problems.append(f"{path}:1: {len(lines) - 1} lines, over {MAX_LINES}")
        for number, length, head in functions(lines):
            count += 1
            if length > MAX_FUNCTION:
                problems.append(f"{path}:{number}: {head[:60]}: {length} lines, over {MAX_FUNCTION}")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"sizes: {files} files of at most {MAX_LINES} lines, "
          f"{count} functions of at most {MAX_FUNCTION}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
