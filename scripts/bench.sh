#!/usr/bin/env bash
# Builds and runs every nnfuzz benchmark; prints the table and writes JSON to out/bench.json.
#   scripts/bench.sh [--benchmark_filter=REGEX]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
build="${BUILD_DIR:-build}"
scripts/setup.sh
cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "${build}" -j "$(nproc)" --target bench_nnfuzz
mkdir -p out
"${build}/benchmarks/bench_nnfuzz" --benchmark_enable_random_interleaving=true \
  --benchmark_out=out/bench.json --benchmark_out_format=json "$@"
echo "bench.sh: JSON in out/bench.json"
