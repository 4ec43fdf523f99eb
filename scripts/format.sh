#!/usr/bin/env bash
# Checks (default) or applies (--fix) the repository's C++ formatting (.clang-format, clang-format
# 14 from Debian 12). The compile-fail cases are excluded: their line numbers are part of the test.
#
# Usage: scripts/format.sh [--fix]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || { echo "format.sh: clang-format not found (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.hpp' '*.cpp' | grep -v '^tests/compile_fail/')
if [[ "${1:-}" == --fix ]]; then
  clang-format -i "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
else
  clang-format --dry-run --Werror "${files[@]}"
  echo "format.sh: ${#files[@]} files formatted as .clang-format says"
fi
