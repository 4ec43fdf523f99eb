#!/usr/bin/env bash
# Builds nnfuzz with CMake and runs every test that is not labelled `slow`: the unit tests, the
# compile-fail tests and the consumer tests (install + find_package + pkg-config,
# add_subdirectory, Meson subproject). Exits non-zero when anything fails.
#
# Usage: scripts/test.sh [extra CMake configure args...]
#   BUILD_DIR  build directory (default: build, in the repository root)
#   JOBS       parallel build jobs (default: nproc)
# The slow tests: ctest --test-dir build -L slow
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-${root}/build}"
jobs="${JOBS:-$(nproc)}"

"${root}/scripts/setup.sh"

cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "${build}" -j "${jobs}"

# ctest's own summary ("100% tests passed, 0 tests failed out of N") is repeated at the end, so
# that it stays visible after long failure output.
log="${build}/ctest.log"
status=0
(cd "${build}" && ctest --output-on-failure -j2 -LE slow) 2>&1 | tee "${log}" || status=$?
echo "test.sh: $(grep -E 'tests passed|tests failed' "${log}" | tail -n 1 || echo 'ctest printed no summary')"
exit "${status}"
