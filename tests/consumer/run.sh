#!/usr/bin/env bash
# nnfuzz consumer tests (fmt's find-package-test / add-subdirectory-test style): build app/main.cpp
# the three ways a user gets nnfuzz, from a clean work directory, and run it (it exits 0 only if it
# finds the planted bug).
#
# Usage: tests/consumer/run.sh <mode> <nnfuzz source dir> <work dir> [extra CMake -D args...]
#   install           configure nnfuzz alone (tests/examples/benchmarks OFF), install it into
#                     <work>/prefix, build find_package/ against it with CMAKE_PREFIX_PATH, run
#                     the user's program (app/main.cpp), the user's token model hunted for a
#                     blacklisted word with the progress fitness (app/text_main.cpp), and
#                     the user's unit tests (a NaN test
#                     and release tests of the user's own scorer in two releases, which write
#                     the release report on failure); then check the
#                     installed nnfuzz.pc and nnfuzz-data.pc (pkg-config) by compiling
#                     app/models_main.cpp with their flags and running it; and a 0.1 project,
#                     unchanged (v01/: 0.1's header paths and names), which must build with
#                     deprecation warnings only, each naming the new path, and run.
#   add_subdirectory  build add_subdirectory/, which adds the source tree with add_subdirectory
#                     (the build-system integration: app/models_main.cpp).
#   meson             build meson_subproject/ in a temporary copy (<work>/src) whose
#                     subprojects/nnfuzz is a symlink to the source tree (app/models_main.cpp).
#   engine_adapter    install nnfuzz alone into <work>/prefix, build engine_adapter/ (a user's
#                     project fuzzing an ONNX network through OpenCV DNN with the installed
#                     adapter header) against it, and run it on $NNFUZZ_ADAPTER_MODEL (the
#                     planted-nan.onnx of tools/train_torch_mnist.py --test-models; if unset or
#                     missing, the app is built but not run, and the script says so); then
#                     engine_adapter/versions_test.cpp (a user's GoogleTest test of two ONNX
#                     releases as a VersionPair: release-v1/-v2.onnx from the same directory),
#                     which must pass on v1 against itself and fail on v2 naming the first
#                     diverging tensor and the metrics, and write the release report with its
#                     pictures into <work>/app/report (check_report below).
#
# Environment: CXX (the C++ compiler; default: CMake's/Meson's choice), BUILD_TYPE (CMake build
# type, default Release), CMAKE_GENERATOR (default Ninja when installed), JOBS (default 1).
# tests/consumer/CMakeLists.txt registers one CTest test per mode (label `consumer`).
# Only <work>/{build,prefix,app,src,pkgconfig_models,unit_tests,v01} are removed and rebuilt: a work dir is reusable.
set -euo pipefail

usage() { sed -n '5,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# -ge 3 ]] || usage
mode="$1"
src="$(cd "$2" && pwd)"
mkdir -p "$3"
work="$(cd "$3" && pwd)"
shift 3
extra_cmake_args=("$@")

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_type="${BUILD_TYPE:-Release}"
jobs="${JOBS:-1}"

fail() { echo "consumer.${mode}: FAIL: $*" >&2; exit 1; }
step() { echo "== consumer.${mode}: $*"; "$@"; }

# check_report DIR WHO TENSOR: the release report a failing test wrote into DIR is whole —
# report.md links the per-layer chart and each finding's picture, the SVG and PNG files are
# what they say, metrics.csv has its data and findings rows, and layers.csv counts a finding
# whose first diverging tensor is TENSOR.
check_report() {
  local dir="$1" who="$2" tensor="$3" f name
  for f in report.md metrics.csv layers.csv; do
    [[ -s "${dir}/${f}" ]] || fail "${who}: the release report has no ${dir}/${f}"
  done
  local md
  md="$(cat "${dir}/report.md")"
  local svgs=("${dir}"/layers-*.svg) pngs=("${dir}"/finding-*.png)
  [[ -f "${svgs[0]}" ]] || fail "${who}: the release report has no per-layer chart (layers-*.svg) in ${dir}"
  [[ -f "${pngs[0]}" ]] || fail "${who}: the release report has no finding picture (finding-*.png) in ${dir}"
  for f in "${svgs[@]}" "${pngs[@]}"; do
    name="$(basename "${f}")"
    [[ "${md}" == *"](${name})"* ]] || fail "${who}: report.md does not link ${name}:"$'\n'"${md}"
  done
  for f in "${svgs[@]}"; do
    grep -q '^<svg ' "${f}" || fail "${who}: ${f} is not an SVG file"
  done
  for f in "${pngs[@]}"; do
    [[ "$(head -c 8 "${f}" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "${who}: ${f} is not a PNG file"
  done
  head -n 1 "${dir}/metrics.csv" | grep -q '^candidate,set,rows,top1_agreement,' || fail "${who}: metrics.csv has no header"
  grep -q ',data,' "${dir}/metrics.csv" || fail "${who}: metrics.csv has no data row"
  grep -q ',findings,1,0,1,' "${dir}/metrics.csv" || fail "${who}: metrics.csv has no row of 1 disagreeing finding"
  grep -Eq "^[^,]*,${tensor},[^,]*,1,1," "${dir}/layers.csv" ||
    fail "${who}: layers.csv does not put the finding's first divergence at ${tensor}:"$'\n'"$(cat "${dir}/layers.csv")"
  echo "== consumer.${mode}: ${who}: the release report in ${dir}: report.md, metrics.csv, layers.csv, ${#svgs[@]} chart(s), ${#pngs[@]} picture(s)"
}

[[ -f "${src}/CMakeLists.txt" && -f "${src}/include/nnfuzz/nnfuzz.hpp" ]] || fail "'${src}' is not nnfuzz's source tree"

# Arguments of every CMake configure step.
cmake_args=(-DCMAKE_BUILD_TYPE="${build_type}")
[[ -n "${CXX:-}" ]] && cmake_args+=(-DCMAKE_CXX_COMPILER="${CXX}")
if [[ -z "${CMAKE_GENERATOR:-}" ]] && command -v ninja >/dev/null; then
  cmake_args+=(-G Ninja)
fi
cmake_args+=("${extra_cmake_args[@]}")

case "${mode}" in
  install)
    rm -rf "${work}/build" "${work}/prefix" "${work}/app" "${work}/pkgconfig_app" "${work}/pkgconfig_models" \
      "${work}/unit_tests"
    prefix="${work}/prefix"
    step cmake -S "${src}" -B "${work}/build" "${cmake_args[@]}" -DCMAKE_INSTALL_PREFIX="${prefix}" \
      -DNNFUZZ_BUILD_TESTS=OFF -DNNFUZZ_BUILD_EXAMPLES=OFF -DNNFUZZ_BUILD_BENCHMARKS=OFF -DNNFUZZ_INSTALL=ON \
      -DNNFUZZ_BUILD_CLI=OFF
    step cmake --build "${work}/build" --parallel "${jobs}"
    step cmake --install "${work}/build"
    for f in include/nnfuzz/nnfuzz.hpp share/cmake/nnfuzz/nnfuzzConfig.cmake \
             share/cmake/nnfuzz/nnfuzzConfigVersion.cmake share/pkgconfig/nnfuzz.pc; do
      [[ -f "${prefix}/${f}" ]] || fail "the install has no ${f}"
    done

    # CMake: find_package(nnfuzz 0.2 REQUIRED) must find this install, not another one.
    step cmake -S "${here}/find_package" -B "${work}/app" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="${prefix}"
    found_dir="$(sed -n 's/^nnfuzz_DIR:PATH=//p' "${work}/app/CMakeCache.txt")"
    [[ "${found_dir}" == "${prefix}/share/cmake/nnfuzz" ]] || fail "find_package found nnfuzz in '${found_dir}', not in ${prefix}"
    step cmake --build "${work}/app" --parallel "${jobs}"
    step "${work}/app/consumer_app"
    step "${work}/app/consumer_models"
    # A user's own token model: the progress fitness makes it say the blacklisted word, random
    # search does not (fixed seed and budget); the finding is minimised to the fewest edits.
    step "${work}/app/consumer_text"
    # A user's own CTC recogniser through CtcTextModel: made to read a blacklisted word.
    step "${work}/app/consumer_ocr"

    # Fuzzing inside the user's unit tests (testing/gtest.hpp, testing/catch2.hpp): the good model
    # passes; the planted regression fails with what fired and the saved file, and its next run
    # fails at once from the regression corpus.
    rm -rf "${work}/unit_tests"
    step cmake -S "${here}/unit_tests" -B "${work}/unit_tests" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="${prefix}"
    step cmake --build "${work}/unit_tests" --parallel "${jobs}"
    step "${work}/unit_tests/gtest_app"
    step "${work}/unit_tests/catch2_app"
    for t in gtest_app catch2_app; do
      if out="$(PLANTED_REGRESSION=1 "${work}/unit_tests/${t}" 2>&1)"; then fail "${t} passed on the planted regression"; fi
      for want in "the objective fired: non-finite" "saved: ${work}/unit_tests/regressions-${t}/planted/" "/findings/finding-" \
                  "minimised: L0" "NNFUZZ_SEED=1" \
                  "the objective fired: reference says 0, candidate says 1" "metrics on this input: top-1 agreement 0" \
                  "first diverging tensor: output" "before it: hidden 0" "the metric gate failed over 4 seeds: logits SQNR"; do
        [[ "${out}" == *"${want}"* ]] || fail "${t}: the failure message lacks '${want}':"$'\n'"${out}"
      done
      check_report "${work}/unit_tests/report-${t}" "${t}" output
      if out="$(PLANTED_REGRESSION=1 "${work}/unit_tests/${t}" 2>&1)"; then fail "${t} passed on its second run"; fi
      [[ "${out}" == *"a saved regression input fires again"* ]] || fail "${t}: the second run did not fail from the regression corpus:"$'\n'"${out}"
      echo "== consumer.${mode}: ${t} fails as it should on the planted regression"
    done

    # A 0.1 project, unchanged (v01/): it must compile with deprecation warnings only, one per
    # moved header naming its new path and one per deprecated name, and run. The version file
    # accepts find_package(nnfuzz 0.1) and 0.2 and refuses 0.0, 0.3 and 1.0.
    rm -rf "${work}/v01"
    step cmake -S "${here}/v01" -B "${work}/v01" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="${prefix}"
    echo "== consumer.${mode}: cmake --build ${work}/v01 (a 0.1 project)"
    v01_log="$(cmake --build "${work}/v01" --parallel "${jobs}" 2>&1)" || fail "the 0.1 project does not build:"$'\n'"${v01_log}"
    for old_new in "io/campaign.hpp:campaign/files.hpp" "io/sync.hpp:campaign/sync.hpp" "io/idx.hpp:data/idx.hpp" \
                   "io/text.hpp:data/text.hpp" "io/weights.hpp:models/mlp_file.hpp" \
                   "models/targets.hpp:targets/mlp_targets.hpp" "models/versions.hpp:targets/version_pair.hpp" \
                   "models/char_rnn_target.hpp:targets/char_rnn_target.hpp" "text_mutators.hpp:mutators/structured.hpp" \
                   "text_objectives.hpp:objectives/text.hpp" "testing.hpp:testing/fuzz_test.hpp" \
                   "coverage/threshold.hpp:coverage/radius.hpp"; do
      want="nnfuzz/${old_new%%:*} is deprecated since nnfuzz 0.2 and goes in 0.3: include <nnfuzz/${old_new#*:}>"
      [[ "${v01_log}" == *"${want}"* ]] || fail "the 0.1 project's build does not warn '${want}':"$'\n'"${v01_log}"
    done
    [[ "${v01_log}" == *"radius_from_squared"* && "${v01_log}" == *"set_radius"* ]] \
      || fail "the 0.1 project's build does not name the new spellings of the threshold names:"$'\n'"${v01_log}"
    others="$(grep -E "(warning|error):" <<<"${v01_log}" | grep -vE "is deprecated" || true)"
    [[ -z "${others}" ]] || fail "the 0.1 project's build gives more than deprecation warnings:"$'\n'"${others}"
    echo "== consumer.${mode}: the 0.1 project builds with $(grep -c "warning:" <<<"${v01_log}") deprecation warnings"
    step "${work}/v01/v01_app" "${work}/v01/work"
    for request in 0.1:TRUE 0.2:TRUE 0.2.0:TRUE 0.0:FALSE 0.3:FALSE 1.0:FALSE; do
      got="$(cmake -DPACKAGE_FIND_VERSION="${request%%:*}" -DVERSION_FILE="${prefix}/share/cmake/nnfuzz/nnfuzzConfigVersion.cmake" \
             -P "${here}/v01/check_version.cmake" 2>&1)"
      [[ "${got}" == "${request#*:}" ]] || fail "nnfuzzConfigVersion.cmake: find_package(nnfuzz ${request%%:*}) compatible '${got}', expected ${request#*:}"
    done

    # pkg-config: the installed nnfuzz.pc (Requires: eigen3, nanoflann) and nnfuzz-data.pc (+ zlib)
    # must resolve and give flags that build a program (the smaller one: the full program was
    # built above).
    export PKG_CONFIG_PATH="${prefix}/share/pkgconfig${PKG_CONFIG_PATH:+:${PKG_CONFIG_PATH}}"
    cflags="$(pkg-config --cflags nnfuzz)" || fail "pkg-config --cflags nnfuzz failed"
    libs="$(pkg-config --libs nnfuzz)" || fail "pkg-config --libs nnfuzz failed"
    echo "== consumer.${mode}: pkg-config nnfuzz $(pkg-config --modversion nnfuzz): cflags '${cflags}', libs '${libs}'"
    [[ " ${cflags} " == *" -I${prefix}/include "* ]] || fail "pkg-config --cflags nnfuzz lacks -I${prefix}/include"
    # The core needs no zlib: its headers (campaign files included) must not reach zlib.h or
    # the models.
    deps="$("${CXX:-c++}" -std=c++17 ${cflags} -M "${here}/app/main.cpp")"
    [[ "${deps}" != *zlib.h* ]] || fail "the core (app/main.cpp: nnfuzz.hpp + campaign/files.hpp) includes zlib.h"
    [[ "${deps}" != *nnfuzz/models/* && "${deps}" != *nnfuzz/data/idx.hpp* ]] || fail "the core includes the models"
    mcflags="$(pkg-config --cflags nnfuzz-data)" || fail "pkg-config --cflags nnfuzz-data failed"
    mlibs="$(pkg-config --libs nnfuzz-data)" || fail "pkg-config --libs nnfuzz-data failed"
    [[ " ${mlibs} " == *" -lz "* ]] || fail "pkg-config --libs nnfuzz-data lacks -lz: '${mlibs}'"
    [[ "$(pkg-config --libs nnfuzz-models)" == "${mlibs}" ]] || fail "nnfuzz-models.pc (the old name) differs from nnfuzz-data.pc"
    # shellcheck disable=SC2086
    step "${CXX:-c++}" -std=c++17 -O2 ${mcflags} "${here}/app/models_main.cpp" -o "${work}/pkgconfig_models" ${mlibs}
    step "${work}/pkgconfig_models"
    ;;

  add_subdirectory)
    rm -rf "${work}/app"
    step cmake -S "${here}/add_subdirectory" -B "${work}/app" "${cmake_args[@]}" -DNNFUZZ_SOURCE_DIR="${src}"
    step cmake --build "${work}/app" --parallel "${jobs}"
    step "${work}/app/consumer_models"
    ;;

  meson)
    command -v meson >/dev/null || fail "meson is not installed"
    case "${build_type}" in
      Debug) meson_buildtype=debug ;;
      RelWithDebInfo) meson_buildtype=debugoptimized ;;
      MinSizeRel) meson_buildtype=minsize ;;
      *) meson_buildtype=release ;;
    esac
    rm -rf "${work}/src" "${work}/build"
    mkdir -p "${work}/src/subprojects"
    cp "${here}/meson_subproject/meson.build" "${work}/src/"
    cp -R "${here}/app" "${work}/src/app"
    ln -s "${src}" "${work}/src/subprojects/nnfuzz"
    # --force-fallback-for: use the subproject even if some nnfuzz.pc is on PKG_CONFIG_PATH.
    step meson setup "${work}/build" "${work}/src" --buildtype="${meson_buildtype}" --force-fallback-for=nnfuzz
    step meson compile -C "${work}/build" -j "${jobs}"
    # As a subproject nnfuzz must add nothing but its dependency (no tests, no install).
    targets="$(meson introspect --targets "${work}/build")"
    [[ "${targets}" != *nnfuzz_tests* ]] || fail "nnfuzz as a Meson subproject built its tests"
    installed="$(meson introspect --installed "${work}/build")"
    [[ "${installed}" == "{}" ]] || fail "nnfuzz as a Meson subproject installs files: ${installed}"
    step "${work}/build/consumer_models"
    ;;

  engine_adapter)
    rm -rf "${work}/build" "${work}/prefix" "${work}/app"
    prefix="${work}/prefix"
    step cmake -S "${src}" -B "${work}/build" "${cmake_args[@]}" -DCMAKE_INSTALL_PREFIX="${prefix}" \
      -DNNFUZZ_BUILD_TESTS=OFF -DNNFUZZ_BUILD_EXAMPLES=OFF -DNNFUZZ_BUILD_BENCHMARKS=OFF -DNNFUZZ_INSTALL=ON \
      -DNNFUZZ_BUILD_CLI=OFF
    step cmake --install "${work}/build"
    [[ -f "${prefix}/include/nnfuzz/adapters/opencv_dnn.hpp" ]] || fail "the install has no nnfuzz/adapters/opencv_dnn.hpp"
    step cmake -S "${here}/engine_adapter" -B "${work}/app" "${cmake_args[@]}" -DCMAKE_PREFIX_PATH="${prefix}"
    step cmake --build "${work}/app" --parallel "${jobs}"
    if [[ -n "${NNFUZZ_ADAPTER_MODEL:-}" && -f "${NNFUZZ_ADAPTER_MODEL}" ]]; then
      step "${work}/app/engine_app" "${NNFUZZ_ADAPTER_MODEL}"
    else
      echo "== consumer.${mode}: built; not run: no model file (NNFUZZ_ADAPTER_MODEL='${NNFUZZ_ADAPTER_MODEL:-}')"
    fi

    # Two releases of an exported network in a user's GoogleTest test (versions_test): v1
    # against itself passes; v1 against release-v2.onnx (its second layer changed) fails, naming
    # the first diverging tensor and the metrics, and fails again from the regression corpus.
    models="$(dirname "${NNFUZZ_ADAPTER_MODEL:-/nonexistent/x}")"
    if [[ -f "${models}/release-v1.onnx" && -f "${models}/release-v2.onnx" ]]; then
      export RELEASE_MODELS="${models}"
      step "${work}/app/versions_test"
      if out="$(RELEASE_CANDIDATE=release-v2.onnx "${work}/app/versions_test" 2>&1)"; then
        fail "versions_test passed on release-v2.onnx"
      fi
      for want in "the objective fired: reference says" "first diverging tensor: dense2" "before it: dense1 0, relu1 0" \
                  "metrics on this input: top-1 agreement 0" "SQNR" "the metric gate failed" \
                  "saved: ${work}/app/regressions/release-v2.onnx/"; do
        [[ "${out}" == *"${want}"* ]] || fail "versions_test: the failure message lacks '${want}':"$'\n'"${out}"
      done
      check_report "${work}/app/report" versions_test dense2
      if out="$(RELEASE_CANDIDATE=release-v2.onnx "${work}/app/versions_test" 2>&1)"; then
        fail "versions_test passed on its second run"
      fi
      [[ "${out}" == *"a saved regression input fires again"* ]] ||
        fail "versions_test: the second run did not fail from the regression corpus:"$'\n'"${out}"
      echo "== consumer.${mode}: versions_test fails as it should on release-v2.onnx"
    else
      echo "== consumer.${mode}: versions_test built; not run: no release-v1.onnx/release-v2.onnx in '${models}'"
    fi
    ;;

  *) usage ;;
esac
echo "== consumer.${mode}: OK"
