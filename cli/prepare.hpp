// SPDX-License-Identifier: MIT
// Model preparation (issue #35 item 1): exported ONNX files that OpenCV DNN 4.6 refuses (a
// dynamic Shape node, opset 11's Clip with input bounds, ...) rewritten by scripts/prepare_onnx.py
// (Debian's python3-onnx: its shape inference and protobuf writer) into a file it loads and runs
// at any batch size. `nnfuzz prepare IN OUT` writes one; `nnfuzz fuzz` prepares a cached copy by
// itself when OpenCV refuses the file it was given (docs/engines.md, "PaddleOCR").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnfuzz_cli {

/// The preparation script: $NNFUZZ_PREPARE_SCRIPT, else the installed
/// <prefix>/share/nnfuzz/prepare_onnx.py next to this executable's bin/, else the source tree's
/// scripts/prepare_onnx.py. Throws UsageError naming the variable or the places looked in.
std::string prepare_script();

/// The Python that runs it: $NNFUZZ_PYTHON, else /usr/bin/python3 (Debian's, with python3-onnx).
std::string prepare_python();

/// Writes `out`, the preparation of the ONNX file `in` for inputs of `shape` (without the batch
/// axis, which stays symbolic and is declared as `declare_batch`). Throws UsageError with the
/// script's own message (the node, its op) when it fails.
void prepare_model(const std::string& in, const std::string& out, const std::vector<std::int64_t>& shape,
                   int declare_batch = 2);

/// The prepared copy of `in` for `shape` in the cache directory ($NNFUZZ_CACHE_DIR, else
/// $XDG_CACHE_HOME/nnfuzz, else ~/.cache/nnfuzz; then prepared/<hash>.onnx, the hash of the file's
/// bytes, the shape and the script), prepared the first time. Safe when several processes ask at once.
std::string prepared_copy(const std::string& in, const std::vector<std::int64_t>& shape);

}  // namespace nnfuzz_cli
