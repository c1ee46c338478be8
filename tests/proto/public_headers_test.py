#!/usr/bin/python3
"""Protobuf types stay out of public headers (../shared/DESIGN.md, issue #10): no header in a
module folder includes the generated psrt.pb.h, except core's messaging layer below. A header
that only names a wire type includes proto/psrt_fwd.h; its .cc includes psrt.pb.h.

Usage: public_headers_test.py SOURCE_DIR. Exit 0 when the rule holds; 1 with one line per
offending header (and per exception that no longer includes it) otherwise."""

import pathlib
import re
import sys

# The module folders of DESIGN.md's table (proto/ is the generated header's own home).
MODULES = ["core", "compress", "engine", "data", "placement", "scheduler", "worker", "server",
           "tools", "bench"]
HEADER_SUFFIXES = {".h", ".hh", ".hpp", ".cuh"}
# Headers allowed to include it, with the reason. One that stops including it must leave the list.
EXCEPTIONS = {
    "core/wire.h": "the messaging layer's header encoding and checks: wire::Header by value",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](?:[^">]*/)?psrt\.pb\.h[">]', re.MULTILINE)


def offenders(root):
    """Yields (relative path, includes psrt.pb.h) for every header under the module folders."""
    for module in MODULES:
        for path in sorted((root / module).rglob("*")):
            if path.suffix in HEADER_SUFFIXES and path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                yield path.relative_to(root).as_posix(), bool(INCLUDE.search(text))


def main(argv):
    if len(argv) != 2:
        print("usage: public_headers_test.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    seen, errors, headers = set(), [], 0
    for rel, includes in offenders(root):
        headers += 1
        if rel in EXCEPTIONS:
            seen.add(rel)
            if not includes:
                errors.append(f"{rel}: listed as an exception but no longer includes psrt.pb.h;"
                              " remove it from EXCEPTIONS")
        elif includes:
            errors.append(f"{rel}: includes psrt.pb.h; forward-declare the wire types it names"
                          " in proto/psrt_fwd.h and include psrt.pb.h in the .cc")
    errors += [f"{rel}: listed as an exception but not found" for rel in EXCEPTIONS
               if rel not in seen]
    if headers == 0:
        errors.append(f"no headers found under {root}: wrong SOURCE_DIR?")
    for line in errors:
        print(line)
    print(f"{headers} headers checked, {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
