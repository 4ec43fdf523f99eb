#!/usr/bin/env bash
# The main demo: installs what is missing, fetches the MNIST digits, builds, trains (or loads)
# the models, then runs TensorFuzz's three experiments with a short budget and prints their tables.
#   scripts/demo.sh            (outputs under out/demo/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
build="${BUILD_DIR:-build}"

scripts/setup.sh
tools/fetch_mnist.sh data/mnist
cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "${build}" -j "$(nproc)" --target 01_planted_bug mnist_train mnist_nan mnist_quantization char_rnn
if grep -q '^nnfuzz_cli' <(cmake --build "${build}" --target help 2>/dev/null); then
  cmake --build "${build}" -j "$(nproc)" --target nnfuzz_cli
fi

echo
echo "=== 1. A planted bug: CGF finds it, random search does not"
"${build}/examples/01_planted_bug" | tail -n 3

echo
echo "=== 2. MNIST models (trained once, then loaded from out/models)"
"${build}/experiments/mnist_train" --data data/mnist --scale pm1 --recipes tf-nan
"${build}/experiments/mnist_train" --data data/mnist --scale 01 --recipes tf-quant

# Every table below has the same four rows (include/nnfuzz/baselines.hpp): random search (no
# coverage, no fitness frontier), fitness only (the defaults without coverage), TensorFuzz's CGF
# and the defaults; the paper's figures are printed beside them, then one line reading the table.
echo
echo "=== 3. NaN hunt: 5 runs x 200,000 executions per row (TensorFuzz's model, pixels and sigma)"
mkdir -p out/demo
"${build}/experiments/mnist_nan" --data data/mnist --out out/demo/mnist_nan --runs 5 | tee out/demo/mnist_nan.txt |
  sed -n '/^| NaN hunt/,$p'
python3 scripts/demo_reading.py nan out/demo/mnist_nan.txt

echo
echo "=== 4. float32 vs float16 disagreements: 30 test images x 10,000 executions per row, L-inf 0.2 and 0.4"
"${build}/experiments/mnist_quantization" --data data/mnist --out out/demo/mnist_quantization --seeds 30 \
  --eps 0.2,0.4 --twins half-arithmetic | tee out/demo/mnist_quantization.txt | sed -n '/^| float32 vs float16/,/^$/p'
python3 scripts/demo_reading.py table out/demo/mnist_quantization.txt

echo
echo "=== 5. A language model says what it must not: blacklisted words, the four rows"
echo "    (a small GRU trained for a minute; its blacklist: experiments/char_rnn_blacklist_h128.txt, rule 1;"
echo "    2 runs x 20,000 executions per row; the defaults here = fitness + aimed noise + projected coverage)"
"${build}/experiments/char_rnn" --hidden 128 --train-steps 1500 --jobs "$(nproc)" fuzz --runs 2 \
  --executions 20000 --blacklist experiments/char_rnn_blacklist_h128.txt --modes random,fitness,tensorfuzz,default \
  --out out/demo/char_rnn | sed -n '/^# char_rnn/,$p' | tee out/demo/char_rnn.txt
echo "(TensorFuzz, 24 hours: CGF 6 of 10 words, random search 1 of 10)"
python3 scripts/demo_reading.py lm out/demo/char_rnn.txt

if [[ -x "${build}/cli/nnfuzz" ]]; then
  echo
  echo "=== 6. From the command line: TensorFuzz's NaN model exported to ONNX, fuzzed through OpenCV DNN (<= 10 s)"
  # Only the NaN model, its weights imported from step 2's (no PyTorch training here).
  /usr/bin/python3 tools/train_torch_mnist.py --data data/mnist --models out/models --import-nnfuzz out/models \
    --only tf-nan
  rm -rf out/demo/cli-nan
  status=0
  "${build}/cli/nnfuzz" fuzz out/models/mnist-torch-tf-nan-pm1.onnx --seeds data/mnist/train-images-idx3-ubyte \
    --max-seeds 10 --scale pm1 --coverage-sum-abs --out out/demo/cli-nan --executions 100000 --seconds 10 -q ||
    status=$?
  echo "(exit status ${status}: 0 nothing found, 1 found, 2 error)"
  [[ ${status} -le 1 ]]
  "${build}/cli/nnfuzz" show out/demo/cli-nan || true
fi

echo
echo "demo: pictures of every finding are in out/demo/mnist_nan/findings and out/demo/mnist_quantization/findings,"
echo "      plots in out/demo/mnist_nan/corpus_growth.png and out/demo/mnist_quantization/found_vs_executions.png"
