#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of the nnfuzz command (ctest label `cli`): cli_test.sh CASE.
# Environment: NNFUZZ (the executable), MODELS (tools/train_torch_mnist.py --test-models),
# SEEDS (tests/cli/make_seeds.py), WORK (a scratch directory), PY (python3), HAVE_TORCH (ON/OFF),
# CMAKE and BUILD (for the `installed` case: cmake --install BUILD into a scratch prefix).
set -u
case_name=$1
W=$WORK/$case_name
rm -rf "$W" && mkdir -p "$W"
fails=0

# expect CODE DESCRIPTION -- command...: runs it, checks the exit status; stdout in $W/out, stderr in $W/err.
expect() {
  local want=$1 what=$2
  shift 3
  "$@" >"$W/out" 2>"$W/err"
  local got=$?
  if [[ $got != "$want" ]]; then
    echo "FAIL: $what: exit $got, expected $want: $*"
    sed 's/^/  stderr: /' "$W/err" | head -5
    fails=$((fails + 1))
  else
    echo "ok: $what (exit $got)"
  fi
}
# says TEXT DESCRIPTION: the last command's stderr contains TEXT.
says() {
  if ! grep -qF -- "$1" "$W/err"; then
    echo "FAIL: $2: stderr does not say '$1':"
    sed 's/^/  stderr: /' "$W/err" | head -5
    fails=$((fails + 1))
  fi
}
# json_is EXPR DESCRIPTION: the last command's stdout is JSON and the Python expression on it (j) is true.
json_is() {
  if ! "$PY" -c "import json,sys; j=json.load(open('$W/out')); sys.exit(0 if ($1) else 1)"; then
    echo "FAIL: $2: stdout is not JSON with $1:"
    head -c 600 "$W/out"
    fails=$((fails + 1))
  fi
}

M=$MODELS
S=$SEEDS
case $case_name in
help)
  for sub in "" fuzz replay minimize whatsup show; do
    expect 0 "--help of '$sub'" -- "$NNFUZZ" $sub --help
    grep -q "Usage" "$W/out" || { echo "FAIL: no usage for '$sub'"; fails=$((fails + 1)); }
  done
  expect 2 "no subcommand" -- "$NNFUZZ"
  expect 2 "an unknown option" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --bogus
  ;;
nan_found)
  # The planted bug (tools/train_torch_mnist.py: NaN once pixel 0 passes ~0.08) from PNG seeds.
  expect 1 "fuzz finds the planted NaN" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --out "$W/c" --executions 20000 --json -q
  json_is "j['found'] and j['findings_total'] >= 1 and 'cross_entropy' in j['groups'][0]['what']" "fuzz --json"
  [[ -f $W/c/corpus.bin && -f $W/c/nnfuzz.json && -f $W/c/stats.json && -f $W/c/stats.csv ]] ||
    { echo "FAIL: campaign files missing: $(ls "$W/c")"; fails=$((fails + 1)); }
  expect 1 "replay: the finding fires again" -- "$NNFUZZ" replay "$W/c" --json
  json_is "j['fire_again'] == j['findings'] >= 1" "replay --json"
  f=$(ls "$W"/c/findings/*.bin | head -1)
  expect 1 "replay of one finding file" -- "$NNFUZZ" replay "$f"
  expect 1 "whatsup" -- "$NNFUZZ" whatsup "$W/c" --json
  json_is "j['findings'] >= 1 and j['corpus_size'] >= 3 and j['objective'] == 'nan'" "whatsup --json"
  expect 1 "minimize" -- "$NNFUZZ" minimize "$W/c" --executions 5000 --json
  json_is "all(m['l0_after'] <= m['l0_before'] for m in j['minimized'])" "minimize --json"
  m=$(ls "$W"/c/minimized/findings/*.bin | head -1)
  expect 1 "a minimised finding still fires" -- "$NNFUZZ" replay "$m"
  expect 1 "show" -- "$NNFUZZ" show "$W/c" --json
  json_is "len(j['groups']) >= 1" "show --json"
  [[ -s $W/c/show/group-1.png ]] || { echo "FAIL: show wrote no PNG"; fails=$((fails + 1)); }
  ;;
nothing_found)
  expect 0 "an untrained MLP has no NaN in 2,000 executions" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --out "$W/c" --executions 2000 --json -q
  json_is "not j['found'] and j['executions'] >= 2000" "fuzz --json"
  expect 0 "whatsup of a campaign without findings" -- "$NNFUZZ" whatsup "$W/c"
  expect 0 "replay of a campaign without findings" -- "$NNFUZZ" replay "$W/c"
  ;;
resume)
  expect 0 "first session" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.csv" --out "$W/c" --executions 1000 --json -q
  json_is "not j['resumed']" "first session --json"
  expect 0 "second session resumes (no --seeds needed)" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --out "$W/c" --executions 1000 --json -q
  json_is "j['resumed'] and j['executions'] >= 2000" "resumed --json"
  expect 2 "resuming with another objective is refused" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --out "$W/c" --objective label
  says "--objective 'nan'" "another objective"
  expect 2 "resuming with another model is refused" -- "$NNFUZZ" fuzz "$M/tiny-cnn.onnx" --out "$W/c"
  says "tiny-mlp.onnx" "another model"
  ;;
seed_formats)
  for s in seeds.idx seeds.npy seeds.csv pngs/seed1.png; do
    expect 1 "planted NaN from $s" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/$s" --out "$W/c-${s//\//-}" --executions 20000 -q
  done
  expect 1 "bytes scaled to [-1, 1] (--scale pm1)" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --scale pm1 --out "$W/pm1" --executions 20000 --json -q
  ;;
objectives)
  expect 1 "disagree: two different untrained networks disagree" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --against "$M/tiny-cnn.onnx" --objective disagree --seeds "$S/seeds.npy" --out "$W/d" --executions 2000 --json -q
  json_is "j['found'] and j['groups'][0]['what'].startswith('reference says')" "disagree --json"
  expect 1 "replay of a disagreement" -- "$NNFUZZ" replay "$W/d"
  "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --against "$M/tiny-mlp-dict.onnx" --objective distance:0.01 --seeds "$S/seeds.npy" --out "$W/same" --executions 2000 --json -q >"$W/out" 2>"$W/err"
  rc=$?
  [[ $rc == 0 ]] || { echo "FAIL: the same network twice differs (exit $rc)"; cat "$W/err" | head -3; fails=$((fails + 1)); }
  json_is "j['objective'] == 'distance:0.01' and not j['found']" "distance --json"
  "$NNFUZZ" fuzz "$M/tiny-cnn.onnx" --objective label --seeds "$S/pngs" --out "$W/l" --executions 3000 --eps 0.3 --json -q >"$W/out" 2>"$W/err"
  rc=$?
  [[ $rc == 0 || $rc == 1 ]] || { echo "FAIL: label exit $rc"; cat "$W/err" | head -3; fails=$((fails + 1)); }
  json_is "j['objective'] == 'label'" "label --json"
  if [[ $rc == 1 ]]; then
    expect 1 "replay of a label finding" -- "$NNFUZZ" replay "$W/l"
    expect 1 "minimize of a label finding" -- "$NNFUZZ" minimize "$W/l" --executions 2000
  fi
  ;;
torch)
  if [[ $HAVE_TORCH != ON ]]; then echo "skipped: built without LibTorch"; exit 0; fi
  expect 1 "planted NaN through LibTorch" -- "$NNFUZZ" fuzz "$M/planted-nan.pt" --output-names logits,softmax,cross_entropy,hidden --seeds "$S/zeros.npy" --out "$W/t" --executions 20000 --json -q
  json_is "j['found']" "torch --json"
  expect 1 "replay through LibTorch" -- "$NNFUZZ" replay "$W/t"
  expect 0 "--list-outputs of a dict module (input shape from the seeds)" -- "$NNFUZZ" fuzz "$M/tiny-mlp-dict.pt" --seeds "$S/seeds.npy" --list-outputs --json
  json_is "sorted(j['outputs']) == ['hidden', 'logits'] and j['input_shape'] == [784]" "--list-outputs --json"
  "$NNFUZZ" fuzz "$M/tiny-cnn.pt" --output-names logits,hidden --dtype bf16 --objective disagree --seeds "$S/seeds.npy" --out "$W/bf" --executions 2000 --json -q >"$W/out" 2>"$W/err"
  rc=$?
  [[ $rc == 0 || $rc == 1 ]] || { echo "FAIL: bf16 exit $rc"; cat "$W/err" | head -3; fails=$((fails + 1)); }
  json_is "j['objective'] == 'disagree'" "bf16 --json"
  expect 2 "a module that does not compile" -- "$NNFUZZ" fuzz "$M/bad-code.pt" --seeds "$S/seeds.npy" --out "$W/x"
  says "bad-code.pt" "bad code"
  expect 2 "wrong --output-names count" -- "$NNFUZZ" fuzz "$M/tiny-cnn.pt" --output-names a,b,c --seeds "$S/seeds.npy" --out "$W/x"
  says "--output-names" "output names"
  ;;
bad_input)
  P=$M/planted-nan.onnx
  expect 2 "missing model" -- "$NNFUZZ" fuzz "$W/nope.onnx" --seeds "$S/seeds.npy" --out "$W/x"
  says "nope.onnx' does not exist" "missing model"
  expect 2 "unknown model extension" -- "$NNFUZZ" fuzz "$S/seeds.npy" --seeds "$S/seeds.npy" --out "$W/x"
  says "--engine" "extension"
  expect 2 "missing seeds" -- "$NNFUZZ" fuzz "$P" --seeds "$W/none.npy" --out "$W/x"
  says "none.npy' does not exist" "missing seeds"
  expect 2 "no --seeds for a new campaign" -- "$NNFUZZ" fuzz "$P" --out "$W/x"
  says "--seeds" "no seeds"
  expect 2 "no --out" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy"
  says "--out" "no out"
  expect 2 "seeds of the wrong size" -- "$NNFUZZ" fuzz "$P" --seeds "$S/wide.npy" --out "$W/x"
  says "holds seeds of 100 values" "wrong size"
  expect 2 "seeds out of range" -- "$NNFUZZ" fuzz "$P" --seeds "$S/range.npy" --out "$W/x"
  says "outside the input range [0, 1]" "range"
  expect 2 "float seeds outside --scale" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --scale 0.5,1 --out "$W/x"
  says "outside the input range" "scale range"
  expect 2 "ragged CSV" -- "$NNFUZZ" fuzz "$P" --seeds "$S/ragged.csv" --out "$W/x"
  says "line 2 has 2 values" "ragged"
  expect 2 "PNGs of different sizes" -- "$NNFUZZ" fuzz "$P" --seeds "$S/pngs-mixed" --out "$W/x"
  says "all seeds must have one size" "mixed PNGs"
  expect 2 "truncated .npy" -- "$NNFUZZ" fuzz "$P" --seeds "$S/truncated.npy" --out "$W/x"
  says "truncated.npy" "truncated npy"
  expect 2 ".npy of int64" -- "$NNFUZZ" fuzz "$P" --seeds "$S/int64.npy" --out "$W/x"
  says "dtype '<i8'" "int64 npy"
  expect 2 "not an IDX file" -- "$NNFUZZ" fuzz "$P" --seeds "$M/tiny-mlp.bin" --out "$W/x"
  says "tiny-mlp.bin" "not idx"
  expect 2 "wrong input shape" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --input-shape 1,28,27 --out "$W/x"
  says "input_shape" "input shape"
  expect 2 "input shape 0" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --input-shape 0 --out "$W/x"
  says "--input-shape" "input shape 0"
  expect 2 "unknown coverage output" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --coverage nope --out "$W/x"
  says "no output 'nope'; its outputs are: logits" "unknown output"
  expect 2 "unknown logits output" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --logits nope --out "$W/x"
  says "--logits" "unknown logits"
  expect 2 "unknown objective" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --objective crash --out "$W/x"
  says "'crash' is not an objective" "objective"
  expect 2 "distance threshold out of range" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --objective distance:2 --out "$W/x"
  says "distance:2" "threshold"
  expect 2 "disagree without --against" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --objective disagree --out "$W/x"
  says "--against" "against"
  expect 2 "--against with nan" -- "$NNFUZZ" fuzz "$P" --against "$P" --seeds "$S/seeds.npy" --out "$W/x"
  says "--against" "against nan"
  expect 2 "--against of another width" -- "$NNFUZZ" fuzz "$P" --against "$M/tiny-mlp.onnx" --input-shape 784 --objective disagree --seeds "$S/wide.npy" --out "$W/x"
  expect 2 "bad --scale" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --scale 1,0 --out "$W/x"
  says "--scale" "scale"
  touch "$W/afile"
  expect 2 "unwritable --out" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --out "$W/afile/sub"
  says "--out" "unwritable"
  expect 2 "--out is a file" -- "$NNFUZZ" fuzz "$P" --seeds "$S/seeds.npy" --out "$W/afile"
  says "afile" "out file"
  expect 2 "replay of a missing directory" -- "$NNFUZZ" replay "$W/none"
  says "none' does not exist" "replay missing"
  mkdir -p "$W/empty"
  expect 2 "whatsup of a directory that is no campaign" -- "$NNFUZZ" whatsup "$W/empty"
  says "nnfuzz.json" "not a campaign"
  expect 2 "show of a directory that is no campaign" -- "$NNFUZZ" show "$W/empty"
  ;;
installed)
  # The command as a user gets it: installed with the package, found on the PATH.
  "$CMAKE" --install "$BUILD" --prefix "$W/prefix" >"$W/install.log" 2>&1 ||
    { echo "FAIL: cmake --install"; tail -5 "$W/install.log"; exit 1; }
  export PATH=$W/prefix/bin:$PATH
  [[ $(command -v nnfuzz) == "$W/prefix/bin/nnfuzz" ]] || { echo "FAIL: no nnfuzz in $W/prefix/bin"; exit 1; }
  expect 0 "installed nnfuzz --version" -- nnfuzz --version
  expect 1 "installed nnfuzz finds the planted NaN" -- nnfuzz fuzz "$M/planted-nan.onnx" --seeds "$S/seeds.npy" --out "$W/c" --executions 20000 --json -q
  json_is "j['found']" "installed --json"
  ;;
*)
  echo "cli_test.sh: unknown case '$case_name'"
  exit 2
  ;;
esac
if [[ $fails != 0 ]]; then
  echo "$fails check(s) failed"
  exit 1
fi
echo "all checks passed"
