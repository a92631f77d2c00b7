#!/usr/bin/python3
"""clang_syntax_check.py: the project's library sources, as the build compiles them, through
clang++-14 -fsyntax-only.

Why: CI builds with GCC 12, the fuzz targets (fuzz/run.sh) with clang 14, and the two accept
different code (clang 14 refuses a lambda that captures a structured binding, which GCC takes):
a clang-only error once kept the fuzz build broken for two sessions unseen.

Usage: clang_syntax_check.py BUILD_DIR SOURCE_DIR
Reads BUILD_DIR/compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS) and checks every entry
under SOURCE_DIR but tests/ and bench/ (what the fuzz build compiles besides fuzz/), each with
its own flags, then the fuzz harnesses themselves (SOURCE_DIR/fuzz/*_fuzz.cc, which this build
does not compile) with the flags of the daemon library, whose include paths cover what they
include. Exit status 0 when all pass, 1 with clang's errors, 77 (skipped) without clang++-14.
"""
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CLANG = "clang++-14"


def clang_command(command):
    """The build's compiler command with clang as the compiler, no output and no object file."""
    args = shlex.split(command)
    out = [CLANG, "-fsyntax-only", "-Wno-unknown-warning-option"]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            out.append(a)
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    build, source = (os.path.realpath(p) for p in sys.argv[1:3])
    if shutil.which(CLANG) is None:
        print(f"{CLANG} is not installed: skipped")
        return 77
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    skip = (os.path.join(source, "tests") + os.sep, os.path.join(source, "bench") + os.sep)
    entries = [e for e in entries
               if os.path.realpath(e["file"]).startswith(source + os.sep)
               and not os.path.realpath(e["file"]).startswith(skip)]
    if not entries:
        print(f"no sources of {source} in {build}/compile_commands.json")
        return 1

    # The fuzz harnesses, each compiled as the daemon library's sources are (the same
    # standard, definitions and include paths).
    daemon_dir = os.path.join(source, "daemon") + os.sep
    template = next((e for e in entries
                     if os.path.realpath(e["file"]).startswith(daemon_dir)), None)
    harnesses = sorted(glob.glob(os.path.join(source, "fuzz", "*_fuzz.cc")))
    if harnesses and template is None:
        print(f"no daemon source in {build}/compile_commands.json to borrow flags from")
        return 1
    for h in harnesses:
        entries.append({"directory": template["directory"], "file": h,
                        "command": template["command"].replace(template["file"], h)})

    def check(e):
        p = subprocess.run(clang_command(e["command"]), cwd=e["directory"],
                           capture_output=True, text=True)
        return e["file"], p.returncode, p.stderr

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        results = list(pool.map(check, entries))
    failed = [r for r in results if r[1] != 0]
    for name, _, err in failed:
        print(f"{name}: clang++-14 refuses it:\n{err}")
    print(f"{len(results)} files, {len(failed)} refused by {CLANG}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
