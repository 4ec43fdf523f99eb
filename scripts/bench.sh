#!/usr/bin/env bash
# Builds and runs every nnfuzz benchmark; prints the table and writes JSON to out/bench.json.
#   scripts/bench.sh [--benchmark_filter=REGEX]
#   PORTABLE=1 scripts/bench.sh ...   the same without -march=native (build-portable/,
#                                     out/bench-portable.json): what an installed nnfuzz gives
#                                     a user who sets no -march; the hot kernels dispatch at run time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
native=ON
json=out/bench.json
build="${BUILD_DIR:-build}"
if [[ "${PORTABLE:-0}" == 1 ]]; then
  native=OFF
  json=out/bench-portable.json
  build="${BUILD_DIR:-build-portable}"
fi
scripts/setup.sh
cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNNFUZZ_NATIVE="${native}" > /dev/null
cmake --build "${build}" -j "$(nproc)" --target bench_nnfuzz
mkdir -p out
"${build}/benchmarks/bench_nnfuzz" --benchmark_enable_random_interleaving=true \
  --benchmark_out="${json}" --benchmark_out_format=json "$@"
echo "bench.sh: JSON in ${json}"
