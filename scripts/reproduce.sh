#!/usr/bin/env bash
# Regenerates the result tables of docs/results.md and the README's summary from runs. Every
# table has the same four rows (nnfuzz/baselines.hpp): random search, fitness only, TensorFuzz's
# CGF, the defaults; each is written between its markers with the command, commit, build and CPU
# under it (scripts/results_tables.py). Fuzzing counts are deterministic per seed: a rerun on the
# same build and instruction set writes the same tables bit for bit.
#
#   scripts/reproduce.sh                 every table: NaN hunt and float32/float16 on MNIST digits
#                                        and Fashion-MNIST (about 25 min on 2 cores), then the
#                                        language model (about 60 min more)
#   scripts/reproduce.sh --no-lm         without the language model (its committed row is kept)
#   scripts/reproduce.sh --lm-only       only the language model (about 60 min); the README's summary
#                                        takes the other rows from the last full run's out/results
#   scripts/reproduce.sh --quick         the quick subset (about 2 min after a 1-minute build):
#                                        Fashion-MNIST (Debian's package, no download), a portable
#                                        build (no -march) in build-repro and the generic noise
#                                        kernel, so that any x86-64 machine gives the same bits
#   scripts/reproduce.sh --quick --check the same, compared with docs/results.md instead of
#                                        written: exits 1 and prints both tables on a difference (CI)
#   scripts/reproduce.sh --extra         also the other experiments (regression testing, guidance
#                                        variants, engines) into out/results/*.txt, not into docs
# BUILD_DIR: the build of the full tables (default build); JOBS: fuzzing threads (default nproc).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"
quick=0 check=0 lm=1 lm_only=0 extra=0
for a in "$@"; do
  case "${a}" in
    --quick) quick=1 ;;
    --check) check=1 ;;
    --no-lm) lm=0 ;;
    --lm-only) lm_only=1 ;;
    --extra) extra=1 ;;
    *) echo "reproduce.sh: unknown option '${a}' (--quick, --check, --no-lm, --lm-only, --extra)" >&2; exit 2 ;;
  esac
done
[[ ${check} -eq 1 && ${quick} -eq 0 ]] && { echo "reproduce.sh: --check needs --quick" >&2; exit 2; }
[[ ${lm_only} -eq 1 && (${lm} -eq 0 || ${quick} -eq 1) ]] && { echo "reproduce.sh: --lm-only goes with neither --no-lm nor --quick" >&2; exit 2; }
jobs="${JOBS:-$(nproc)}"
fashion=/usr/share/datasets/fashion-mnist
tables="${root}/scripts/results_tables.py"
out="${root}/out/results"
mkdir -p "${out}"
commit="$(git -C "${root}" rev-parse --short HEAD 2>/dev/null || echo unknown)"
cpu="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
isa="$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || (grep -qw avx2 /proc/cpuinfo && echo AVX2 || echo SSE2))"
compiler="$(c++ --version | head -n 1)"

if [[ ${quick} -eq 1 ]]; then
  build="${root}/build-repro"
  cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNNFUZZ_NATIVE=OFF -DNNFUZZ_BUILD_TESTS=OFF -DNNFUZZ_BUILD_EXAMPLES=ON \
    -DNNFUZZ_BUILD_BENCHMARKS=OFF -DNNFUZZ_BUILD_CLI=OFF -DNNFUZZ_BUILD_ADAPTERS=OFF -DNNFUZZ_INSTALL=OFF > /dev/null
  cmake --build "${build}" -j "${jobs}" --target guidance
  export NNFUZZ_NOISE_KERNEL=generic
  # Eigen blocks its products (the training's) for the caches the CPU reports: fixed sizes make
  # the bits the same on every x86-64 machine (measured: two CPUs with other caches differed).
  export NNFUZZ_EIGEN_CACHE_SIZES=32768,1048576,33554432
  how="build: \`${compiler}\`, CMake Release, portable (no -march), noise kernel \`generic\` and Eigen's blocking for fixed cache sizes (any x86-64 gives these bits)"
else
  build="${root}/${BUILD_DIR:-build}"
  tools/fetch_mnist.sh data/mnist
  cmake -S . -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "${build}" -j "${jobs}" --target guidance char_rnn mnist_train
  how="build: \`${compiler}\`, CMake Release, -march=native; noise kernel automatic (${isa})"
fi
bin="${build}/experiments"
models="${build}/models"  # trained per build: weights depend on the instruction set
status=0

# table NAME COMMAND...: runs a driver, takes the first markdown table of its output, and writes
# it into docs/results.md (or, with --check, compares it with what is there).
table() {
  local name="$1"; shift
  echo "== ${name}: $*" >&2
  "$@" > "${out}/${name}.txt"
  python3 "${tables}" extract "${out}/${name}.txt" "${out}/${name}.md"
  put "${name}" "$*"
}
# put NAME COMMAND: writes (or checks) out/results/NAME.md between NAME's markers.
put() {
  local name="$1" command="${2//${root}\//}"
  cat "${out}/${1}.md" >&2
  if [[ ${check} -eq 1 ]]; then
    python3 "${tables}" check docs/results.md "${name}" "${out}/${name}.md" || status=1
  else
    python3 "${tables}" write docs/results.md "${name}" "${out}/${name}.md" \
      "<sub>\`${command}\` · commit ${commit} · ${how} · CPU: ${cpu} · $(date -u +%F)</sub>"
  fi
}

b=(random,fitness,tensorfuzz,default)
if [[ ${quick} -eq 1 ]]; then
  # Small budgets on purpose: this subset checks that the tables reproduce, not what they show.
  table quick-nan "${bin}/guidance" --task nan --data "${fashion}" --models "${models}" --masters 1 --runs 4 \
    --executions 40000 --jobs "${jobs}" --out "${out}/guidance" --guidance "${b[@]}"
  table quick-f16 "${bin}/guidance" --task f16 --eps 0.2 --data "${fashion}" --models "${models}" --masters 1 \
    --images 12 --executions 4000 --jobs "${jobs}" --out "${out}/guidance" --guidance "${b[@]}"
  exit "${status}"
fi

# The paper's settings first (TensorFuzz's recipes, pixels, σ and radius are the drivers' defaults
# for each task): NaN hunt 10 runs x 200,000 executions per master seed on [-1,1] pixels;
# float16: 100 test images x 10,000 executions per master seed, L-inf 0.2 and 0.4 on [0,1].
common=(--models "${models}" --masters 1,2,3 --jobs "${jobs}" --out "${out}/guidance" --guidance "${b[@]}")
if [[ ${lm_only} -eq 0 ]]; then
  table nan-mnist "${bin}/guidance" --task nan --data data/mnist "${common[@]}"
  table f16-mnist-02 "${bin}/guidance" --task f16 --eps 0.2 --data data/mnist "${common[@]}"
  table f16-mnist-04 "${bin}/guidance" --task f16 --eps 0.4 --data data/mnist "${common[@]}"
  table nan-fashion "${bin}/guidance" --task nan --data "${fashion}" "${common[@]}"
  table f16-fashion-02 "${bin}/guidance" --task f16 --eps 0.2 --data "${fashion}" "${common[@]}"
else
  for name in nan-mnist f16-mnist-02 f16-mnist-04 nan-fashion; do
    [[ -f "${out}/${name}.md" ]] || { echo "reproduce.sh: --lm-only needs ${out}/${name}.md from a full run; run scripts/reproduce.sh --no-lm first" >&2; exit 2; }
  done
fi

summary=(
  "NaN hunt, MNIST: runs that find a NaN=10/10 / 0/10=${out}/nan-mnist.md"
  "float32 vs float16, MNIST, L∞ 0.2: seeds with a disagreement=70% / 0% (L∞ 0.4 on [−1,1])=${out}/f16-mnist-02.md"
  "float32 vs float16, MNIST, L∞ 0.4=70% / 0%=${out}/f16-mnist-04.md"
  "NaN hunt, Fashion-MNIST=—=${out}/nan-fashion.md"
)
if [[ ${lm} -eq 1 ]]; then
  # The language model: the demo-size GRU (H 128), blacklist rule 1, sampled decoding, 10 runs x
  # 50,000 executions per master seed.
  lm_out=()
  for m in 1 2 3; do
    f="${out}/lm-m${m}.txt"
    echo "== lm master ${m}" >&2
    "${bin}/char_rnn" --hidden 128 --train-steps 1500 --jobs "${jobs}" fuzz \
      --blacklist experiments/char_rnn_blacklist_h128.txt --seed "${m}" --runs 10 --executions 50000 \
      --modes random,fitness,tensorfuzz,default --out "${out}/lm-m${m}" > "${f}"
    lm_out+=("${f}")
  done
  python3 "${tables}" lm "${out}/lm.md" "${lm_out[@]}"
  put lm "${bin}/char_rnn --hidden 128 --train-steps 1500 fuzz --blacklist experiments/char_rnn_blacklist_h128.txt --seed M --runs 10 --executions 50000 --modes random,fitness,tensorfuzz,default (M = 1, 2, 3)"
  summary+=("Language model: blacklisted words found (median of 3 master seeds)=6 / 1 of 10 in 24 h=${out}/lm.md")
else
  # --no-lm: the language model's row stays, taken from its committed table (its own line in
  # docs/results.md says when and how that was run).
  python3 "${tables}" from-doc docs/results.md lm "${out}/lm.md"
  summary+=("Language model: blacklisted words found (median of 3 master seeds)=6 / 1 of 10 in 24 h=${out}/lm.md")
fi
python3 "${tables}" summary "${out}/summary.md" "${summary[@]}"
written="commit ${commit}"
[[ ${lm_only} -eq 1 ]] && written="the language model's row at commit ${commit} (\`--lm-only\`), the other rows from the last full run: see each table's line in docs/results.md"
[[ ${lm} -eq 0 ]] && written="commit ${commit} (\`--no-lm\`: the language model's row from its table in docs/results.md, see its line there)"
python3 "${tables}" write README.md summary "${out}/summary.md" \
  "<sub>Written by \`scripts/reproduce.sh\` · ${written} · ${how} · CPU: ${cpu} · $(date -u +%F)</sub>"

if [[ ${extra} -eq 1 ]]; then
  run() { local name="$1"; shift; echo "== ${name}: $*" >&2; "$@" > "${out}/${name}.txt"; }
  run regression-seed1 "${bin}/model_regression" --data data/mnist --fashion "${fashion}" --seed 1 \
    --out "${out}/regression-seed1"
  run guidance-nan-variants "${bin}/guidance" --task nan --masters 1,2,3 --out "${out}/guidance" --guidance \
    random,fitness,tensorfuzz,default,radius-x10,radius-div10,calibrated,multiscale,probabilistic,power,bandit,fitness-calibrated,fitness-square,default-no-shape,nc,kmnc,nbc,snac,tknc,nlc
  run engines-nan "${bin}/engines" nan --runs 5 --executions 200000 --sigma-range 4
fi
exit "${status}"
