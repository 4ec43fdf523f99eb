#!/usr/bin/env bash
# Smoke test of the MNIST examples: runs each with a tiny budget on a tiny synthetic data set and
# checks its outputs (table lines parse, CSVs, PNGs, plots when gnuplot exists).
#   tests/smoke_examples.sh BUILD_DIR WORK_DIR
set -euo pipefail
build="$1"
work="$2"
rm -rf "${work}"
mkdir -p "${work}"
"${build}/tests/make_tiny_mnist" "${work}/data" 300 100

fail() { echo "smoke_examples.sh: FAIL: $*" >&2; exit 1; }

"${build}/examples/mnist_train" --data "${work}/data" --models "${work}/models" --train-steps 200 \
  --recipes tf-nan,adam > "${work}/train.txt"
grep -Eq 'model tf-nan-200steps: test accuracy [0-9.]+%' "${work}/train.txt" || fail "mnist_train printed no accuracy"

"${build}/examples/mnist_nan" --data "${work}/data" --models "${work}/models" --out "${work}/nan" --train-steps 200 \
  --runs 2 --executions 3000 --seeds 3 > "${work}/nan.txt"
# Each table row: method run found executions seconds corpus spread what replayed.
rows=$(grep -Ec '^(cgf|random) +[0-9]+ +(yes|no) +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ ' "${work}/nan.txt" || true)
[[ "${rows}" == 4 ]] || fail "mnist_nan table has ${rows} rows, expected 4"
grep -Eq '^summary: CGF found a NaN in [0-9]+/2 runs, random search in [0-9]+/2' "${work}/nan.txt" || fail "mnist_nan summary"
for f in cgf-run1 cgf-run2 random-run1 random-run2; do
  head -n1 "${work}/nan/csv/${f}.csv" | grep -q '^executions,corpus_size,findings$' || fail "csv ${f}"
done

"${build}/examples/mnist_quantization" --data "${work}/data" --models "${work}/models" --out "${work}/q" --train-steps 200 \
  --seeds 4 --executions 2000 --eps 0.4 --jobs 2 > "${work}/q.txt"
rows=$(grep -Ec '^half-(arithmetic|storage) +0.4 +(cgf|random) +[0-9]+/4 ' "${work}/q.txt" || true)
[[ "${rows}" == 4 ]] || fail "mnist_quantization table has ${rows} rows, expected 4"
[[ $(wc -l < "${work}/q/csv/seeds.csv") == 17 ]] || fail "seeds.csv should have 16 rows + header"
# Same flags and seed: the same table (reproducibility), whatever the number of threads.
"${build}/examples/mnist_quantization" --data "${work}/data" --models "${work}/models" --out "${work}/q2" --train-steps 200 \
  --seeds 4 --executions 2000 --eps 0.4 --jobs 1 > "${work}/q2.txt"
diff <(grep -E '^half-' "${work}/q.txt") <(grep -E '^half-' "${work}/q2.txt") || fail "quantization table not reproducible"

if command -v gnuplot > /dev/null; then
  [[ -s "${work}/nan/corpus_growth.png" ]] || fail "no corpus_growth.png"
  [[ -s "${work}/q/found_vs_executions.png" ]] || fail "no found_vs_executions.png"
fi
echo "smoke_examples.sh: OK"
