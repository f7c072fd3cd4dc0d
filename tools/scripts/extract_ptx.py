#!/usr/bin/env python3
"""Writes the PTX of a gpu.binary (gpu-module-to-binary with format=isa)
from MLIR text to a file: extract_ptx.py IN.mlir OUT.ptx [BINARY_NAME]."""

import re
import sys


def unescape(text):
    """MLIR string literal escapes: \\XX (hex), \\\\, \\\", \\n, \\t."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in "\\\"":
            out.append(nxt)
            i += 2
        elif nxt == "n":
            out.append("\n")
            i += 2
        elif nxt == "t":
            out.append("\t")
            i += 2
        else:
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
    return "".join(out)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    text = open(sys.argv[1]).read()
    name = sys.argv[3] if len(sys.argv) == 4 else None
    for m in re.finditer(r'gpu\.binary @(\w+)[^\n]*?assembly = "((?:[^"\\]|\\.)*)"',
                         text):
        if name is None or m.group(1) == name:
            with open(sys.argv[2], "w") as f:
                f.write(unescape(m.group(2)))
            return
    sys.exit(f"{sys.argv[1]}: no gpu.binary with PTX (format=isa)"
             + (f" named {name}" if name else ""))


if __name__ == "__main__":
    main()
