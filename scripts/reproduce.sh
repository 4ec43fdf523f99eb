#!/usr/bin/env bash
# Reproduces every table of the README's "Results" section (about 80 minutes on 2 cores with the guidance comparison, then about
# 75 more for the language model's experiment, which comes last).
# Each command's output goes to out/results/<name>.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
b="${BUILD_DIR:-build}/experiments"
fashion=/usr/share/datasets/fashion-mnist
mkdir -p out/results
run() {
  local name="$1"; shift
  echo "== ${name}: $*"
  "$@" > "out/results/${name}.txt"
  grep -E '^summary|^half-|^\| [a-z]|test accuracy|disagreements|^## |^words found|^runs with|held-out' \
    "out/results/${name}.txt" || true
}
run train-mnist-pm1 "${b}/mnist_train" --data data/mnist --scale pm1
run train-mnist-01 "${b}/mnist_train" --data data/mnist --scale 01
run train-fashion-01 "${b}/mnist_train" --data "${fashion}" --scale 01
run train-fashion-pm1 "${b}/mnist_train" --data "${fashion}" --scale pm1 --recipes tf-nan

# NaN hunt: TensorFuzz's settings first, then multi-scale noise.
run nan-mnist-tf-pm1 "${b}/mnist_nan" --data data/mnist --out out/results/nan-mnist-tf-pm1
run nan-mnist-tf-01 "${b}/mnist_nan" --data data/mnist --out out/results/nan-mnist-tf-01 --scale 01 --sigma 0.1
run nan-mnist-ms-pm1 "${b}/mnist_nan" --data data/mnist --out out/results/nan-mnist-ms-pm1 --sigma-range 4
run nan-mnist-ms-01 "${b}/mnist_nan" --data data/mnist --out out/results/nan-mnist-ms-01 --scale 01 --sigma 0.1 --sigma-range 4
run nan-mnist-adam-ms-pm1 "${b}/mnist_nan" --data data/mnist --out out/results/nan-mnist-adam-ms-pm1 --recipe adam --sigma-range 4
run nan-fashion-tf-pm1 "${b}/mnist_nan" --data "${fashion}" --out out/results/nan-fashion-tf-pm1
run nan-fashion-ms-pm1 "${b}/mnist_nan" --data "${fashion}" --out out/results/nan-fashion-ms-pm1 --sigma-range 4

# float32 vs float16: 100 test seeds x 10,000 executions, radius 0.2 and 0.4 on [0,1] pixels.
run quant-mnist-tf "${b}/mnist_quantization" --data data/mnist --out out/results/quant-mnist-tf
run quant-mnist-adam "${b}/mnist_quantization" --data data/mnist --out out/results/quant-mnist-adam --recipe adam \
  --twins half-arithmetic
run quant-fashion-tf "${b}/mnist_quantization" --data "${fashion}" --out out/results/quant-fashion-tf --twins half-arithmetic

# Regression testing between model versions: float16, int8, pruned 50/90%, retrained vs `adam`,
# 100 test seeds x 2,000 executions at L-inf 0.1 and 0.2, master seeds 1 and 2 (about 1 min each).
run regression-seed1 "${b}/model_regression" --data data/mnist --fashion "${fashion}" --seed 1 \
  --out out/results/regression-seed1
run regression-seed2 "${b}/model_regression" --data data/mnist --fashion "${fashion}" --seed 2 \
  --out out/results/regression-seed2

# Guidance compared (README "Guidance compared"; about 60 minutes on 2 cores). Each row of a
# table is a --guidance name; every run of every row is in out/guidance/<data>-<task>/runs.csv.
run guidance-nan "${b}/guidance" --task nan --masters 1,2,3 --out out/results/guidance --guidance \
  random,tensorfuzz,radius-x10,radius-div10,calibrated,multiscale,probabilistic,power,bandit,fitness,fitness-multiscale,square,fitness-square,own-fitness-square,default,default-no-shape,nc,kmnc,nbc,snac,tknc,nlc
run guidance-nan-target01 "${b}/guidance" --task nan --masters 1,2,3 --out out/results/guidance-target01 \
  --target-rate 0.1 --guidance calibrated-static
for scale in 10 0.1; do
  run "guidance-nan-coverage-x${scale}" "${b}/guidance" --task nan --masters 1,2,3 --out out/results/guidance \
    --coverage-scale "${scale}" --guidance tensorfuzz,calibrated,fitness-square
done
run guidance-f16-02 "${b}/guidance" --task f16 --eps 0.2 --masters 1,2,3 --out out/results/guidance --guidance \
  random,tensorfuzz,calibrated,power,bandit,fitness,square,fitness-square,default,nlc,tknc
run guidance-f16-04 "${b}/guidance" --task f16 --eps 0.4 --masters 1,2,3 --out out/results/guidance --guidance \
  random,tensorfuzz,calibrated,fitness,square,fitness-square,default
run guidance-fashion-nan "${b}/guidance" --task nan --data "${fashion}" --masters 1,2,3 --out out/results/guidance \
  --guidance random,tensorfuzz,calibrated,multiscale,fitness,fitness-square,default
run guidance-fashion-f16-02 "${b}/guidance" --task f16 --eps 0.2 --data "${fashion}" --masters 1,2,3 \
  --out out/results/guidance --guidance random,tensorfuzz,calibrated,fitness,fitness-square,default

# The character-level language model (longer: the model trains for ~13 minutes the first time,
# the blacklist rule samples 16 M characters, and each objective runs 10 + 10 fuzz runs).
run char-rnn-train "${b}/char_rnn" train
run char-rnn-blacklist "${b}/char_rnn" blacklist
for n in 50000 200000; do
  run "char-rnn-blacklist-${n}" "${b}/char_rnn" fuzz --objective blacklist --blacklist experiments/char_rnn_blacklist.txt \
    --runs 10 --executions "${n}" --modes cgf,random --out "out/results/char-rnn-${n}"
done
run char-rnn-repeat "${b}/char_rnn" fuzz --objective repeat --runs 10 --executions 50000 --modes cgf,random \
  --out out/results/char-rnn-50000
run char-rnn-blacklist-new-default "${b}/char_rnn" fuzz --objective blacklist --blacklist experiments/char_rnn_blacklist.txt \
  --runs 10 --executions 50000 --modes cgf --target-rate 0.9 --max-rate 0.1 --out out/results/char-rnn-new-default
# Issue #23's protocol (the guided search): the demo-size model (H 128), both blacklists, sampled
# and greedy decoding, three master seeds x 10 runs of 50,000 executions per mode (about 80 min
# on 2 cores); then the table: scripts/lm_summary.py out/lm.
run lm-protocol env OUT=out/lm scripts/lm_protocol.sh
