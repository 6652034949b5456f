#!/usr/bin/env bash
# Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.
# See LICENSE for license information.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#
# Checks the tracked sources: (a) C and C++ files (*.h, *.cpp, *.c) are as
# clang-format (the repository's .clang-format) writes them, and (b) every
# source file (*.h *.cpp *.c *.td *.py *.sh *.cmake CMakeLists.txt; test
# inputs such as *.mlir are data, not sources) names its license with an
# SPDX line in its header. With --fix, formats the files and adds the
# missing license lines instead (after the file's first header line, in its
# comment style). PATHs restrict both to the tracked files under them.
#
#   scripts/check-format.sh [--fix] [PATH...]
#
# CLANG_FORMAT selects the formatter (default: clang-format-22, the
# toolchain's own, installed by scripts/packages.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
for arg in "$@"; do
  case "$arg" in
    -*) echo "error: unknown option '$arg' (usage: $0 [--fix] [PATH...])" >&2
        exit 2 ;;
  esac
done
clang_format=${CLANG_FORMAT:-clang-format-22}
if ! command -v "$clang_format" > /dev/null; then
  echo "error: no '$clang_format' (set CLANG_FORMAT to a clang-format)" >&2
  exit 2
fi

# Tracked sources (NUL-separated), under PATHs if given.
mapfile -d '' sources < <(git ls-files -z -- "$@" |
  grep -zE '\.(h|cpp|c|td|py|sh|cmake)$|(^|/)CMakeLists\.txt$' || true)
# Regular files only: clang-format -i would write through a link.
cxx=()
for file in "${sources[@]}"; do
  case "$file" in
    *.h|*.cpp|*.c) [ -f "$file" ] && [ ! -L "$file" ] && cxx+=("$file") ;;
  esac
done

status=0
# (a) clang-format.
if [ ${#cxx[@]} -gt 0 ]; then
  if [ $fix -eq 1 ]; then
    printf '%s\0' "${cxx[@]}" | xargs -0 "$clang_format" -i --style=file
  elif ! printf '%s\0' "${cxx[@]}" |
      xargs -0 "$clang_format" --dry-run -Werror --style=file; then
    echo "error: files above are not clang-formatted (run $0 --fix)" >&2
    status=1
  fi
fi

# (b) SPDX lines: checked (or added with --fix) by one Python program over
# every source.
if [ ${#sources[@]} -gt 0 ]; then
  if ! printf '%s\0' "${sources[@]}" | python3 -c '
import os
import sys
import tempfile

SPDX = "SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception"
NOTICE = ["Part of DistOpt, under the Apache License v2.0 with LLVM Exceptions.",
          "See LICENSE for license information.", SPDX]
RULER = "//===----------------------------------------------------------------------===//"
# The header is this many lines at most (a shebang, a banner, the notice).
HEADER_LINES = 12
fix = sys.argv[1] == "1"


def with_notice(lines, path):
    """`lines` with the notice after the first header line."""
    first = lines[0] if lines else ""
    rest = lines[1:]
    after = rest[0] if rest else ""
    if first.startswith("/*"):
        # A C banner: " *" lines up to " */" or its closing ruler.
        block = [" *"] + [" * " + line for line in NOTICE]
        if after.startswith(" * "):
            block.append(" *")
        return [first] + block + rest
    if first.startswith("//"):
        block = ["//"] + ["// " + line for line in NOTICE]
        if after == "//":
            pass
        elif after.startswith("// "):
            block.append("//")
        else:
            block += ["//", RULER]
        return [first] + block + rest
    # "#" comments: after a shebang or a mode line, else first.
    block = ["# " + line for line in NOTICE]
    if first.startswith("#!") or first.startswith("# -*-"):
        head, rest = [first], rest
    else:
        head, rest = [], lines
    following = rest[0] if rest else ""
    if following.startswith("# "):
        block.append("#")
    elif following.strip():
        block.append("")
    return head + block + rest


missing, links = [], []
for path in sys.stdin.read().split("\0"):
    if not path:
        continue
    if os.path.islink(path) or not os.path.isfile(path):
        links.append(path)
        continue
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    if any(SPDX in line for line in lines[:HEADER_LINES]):
        continue
    if not fix:
        missing.append(path)
        continue
    fixed = "\n".join(with_notice(lines, path))
    # Beside the file, then renamed over it (its mode kept): never half
    # written.
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(path) or ".",
                                prefix=".spdx-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(fixed)
        os.chmod(temp, os.stat(path).st_mode & 0o7777)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise
for path in missing:
    print(f"{path}:1: error: no \"{SPDX}\" line in the first "
          f"{HEADER_LINES} lines", file=sys.stderr)
for path in links:
    print(f"{path}: error: not a regular file (a link?): not checked",
          file=sys.stderr)
sys.exit(1 if missing or links else 0)
' "$fix"; then
    echo "error: sources above have no SPDX line (run $0 --fix)" >&2
    status=1
  fi
fi
exit $status
