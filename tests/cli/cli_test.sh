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
  for sub in "" fuzz replay minimize whatsup show merge convert; do
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
baselines)
  # --baseline: the four named searches (nnfuzz/baselines.hpp); random search never grows the corpus.
  for b in random fitness tensorfuzz default; do
    expect 0 "--baseline $b runs" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --out "$W/b-$b" --baseline "$b" --executions 2000 --json -q
    "$PY" -c "import json,sys; sys.exit(0 if json.load(open('$W/b-$b/nnfuzz.json'))['baseline'] == '$b' else 1)" ||
      { echo "FAIL: nnfuzz.json of --baseline $b does not record it"; fails=$((fails + 1)); }
  done
  expect 0 "random search: the corpus stays the seeds" -- "$NNFUZZ" whatsup "$W/b-random" --json
  seeds=$("$PY" -c "import numpy; print(len(numpy.load('$S/seeds.npy')))")
  json_is "j['corpus_size'] == $seeds" "whatsup --json of --baseline random"
  expect 0 "a resumed campaign keeps its baseline" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --out "$W/b-random" --executions 1000 --json -q
  expect 2 "resuming with another --baseline is refused" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --out "$W/b-random" --baseline default
  says "--baseline 'random'" "another baseline"
  expect 2 "an unknown --baseline is refused" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --out "$W/b-bad" --baseline cgf
  says "--baseline: 'cgf'" "an unknown baseline"
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
status)
  expect 0 "status lines on stderr" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --out "$W/c" --executions 2000
  says "INITED cov:" "status INITED"
  says "DONE   cov:" "status DONE"
  grep -q "exec/s:" "$W/err" || { echo "FAIL: no exec/s in the status"; fails=$((fails + 1)); }
  # The progress bar against --executions 2000: empty at INITED, full at DONE.
  grep -qE "INITED .* \[\.{20}\] 0%$" "$W/err" || { echo "FAIL: no empty progress bar at INITED"; fails=$((fails + 1)); }
  grep -qE "DONE .* \[#{20}\] 100%$" "$W/err" || { echo "FAIL: no full progress bar at DONE"; fails=$((fails + 1)); }
  grep -q "nothing found in" "$W/out" || { echo "FAIL: no summary on stdout"; fails=$((fails + 1)); }
  expect 0 "--json: no status lines" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --out "$W/c" --executions 1000 --json
  [[ ! -s $W/err ]] || { echo "FAIL: --json wrote to stderr: $(head -2 "$W/err")"; fails=$((fails + 1)); }
  json_is "j['resumed']" "--json"
  expect 0 "-q: no status lines" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --out "$W/c" --executions 1000 -q
  [[ ! -s $W/err ]] || { echo "FAIL: -q wrote to stderr: $(head -2 "$W/err")"; fails=$((fails + 1)); }
  ;;
merge)
  # Two campaigns on one model, merged; the result is a campaign every subcommand reads.
  expect 1 "campaign a" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --out "$W/a" --executions 20000 --seed 1 -q
  expect 1 "campaign b" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/seeds.npy" --out "$W/b" --executions 20000 --seed 2 -q
  expect 1 "merge a and b" -- "$NNFUZZ" merge "$W/m" "$W/a" "$W/b" --json
  json_is "len(j['campaigns']) == 2 and 0 < j['elements_kept'] <= j['elements_read'] and j['finding_files_written'] >= 1 and j['bugs'][0]['count'] >= 2 and j['radius'] > 0" "merge --json"
  expect 1 "whatsup of the merged campaign" -- "$NNFUZZ" whatsup "$W/m" --json
  json_is "j['findings'] >= 1 and j['corpus_size'] >= 1 and j['objective'] == 'nan'" "whatsup merged --json"
  expect 1 "replay of the merged campaign" -- "$NNFUZZ" replay "$W/m"
  expect 1 "fuzz resumes the merged campaign" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --out "$W/m" --executions 1000 --json -q
  json_is "j['resumed']" "resume merged --json"
  expect 1 "merge of one campaign, text output" -- "$NNFUZZ" merge "$W/m0" "$W/a" --radius 0.05 --samples-per-bug 0 --no-queues
  grep -q "merged 1 campaign(s)" "$W/out" || { echo "FAIL: merge text: $(head -2 "$W/out")"; fails=$((fails + 1)); }
  # Bad input: each names the subcommand and the directory.
  expect 2 "merge: missing input directory" -- "$NNFUZZ" merge "$W/x" "$W/a" "$W/none"
  says "merge: input directory '$W/none' does not exist" "missing dir"
  mkdir -p "$W/empty"
  expect 2 "merge: a directory that is no campaign" -- "$NNFUZZ" merge "$W/x" "$W/empty"
  says "merge: " "not a campaign"
  says "empty" "not a campaign names it"
  mkdir -p "$W/nojson" && cp "$W/a/corpus.bin" "$W/nojson/"
  expect 2 "merge: a corpus without nnfuzz.json" -- "$NNFUZZ" merge "$W/x" "$W/nojson"
  says "nojson" "no nnfuzz.json"
  touch "$W/afile"
  expect 2 "merge: unwritable OUT" -- "$NNFUZZ" merge "$W/afile/sub" "$W/a"
  says "merge: OUT" "unwritable OUT"
  expect 2 "merge: OUT not empty" -- "$NNFUZZ" merge "$W/b" "$W/a"
  says "is not empty" "OUT not empty"
  expect 0 "a campaign of another model" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --out "$W/other" --executions 1000 -q
  expect 2 "merge: campaigns of different models" -- "$NNFUZZ" merge "$W/x" "$W/a" "$W/other"
  says "was not made with the model" "different models"
  expect 2 "merge: bad --radius" -- "$NNFUZZ" merge "$W/x" "$W/a" --radius -1
  says "--radius" "bad radius"
  expect 2 "merge: no DIR" -- "$NNFUZZ" merge "$W/x"
  ;;
workers)
  expect 1 "two in-process workers find the planted NaN" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --out "$W/c" --workers 2 --executions 20000 --json
  json_is "j['found'] and j['workers'] == 2 and j['executions'] >= 6" "workers --json"
  [[ -f $W/c/workers/0/corpus.bin && -f $W/c/workers/1/corpus.bin && -f $W/c/corpus.bin ]] ||
    { echo "FAIL: worker directories or merged corpus missing: $(ls -R "$W/c" | head)"; fails=$((fails + 1)); }
  expect 1 "replay of a workers' campaign" -- "$NNFUZZ" replay "$W/c"
  expect 1 "whatsup of a workers' campaign" -- "$NNFUZZ" whatsup "$W/c" --json
  json_is "j['findings'] >= 1" "whatsup workers --json"
  expect 1 "resume with the workers of nnfuzz.json" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --out "$W/c" --executions 2000 --json -q
  json_is "j['resumed'] and j['workers'] == 2" "resume workers --json"
  expect 2 "resume with another --workers" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --out "$W/c" --workers 3
  says "--workers '2'" "another --workers"
  expect 1 "two workers: status lines on stderr" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --out "$W/st" --workers 2 --executions 20000
  says "INITED cov:" "worker 0's status"
  says "FOUND" "a worker's FOUND line"
  expect 0 "two workers, nothing to find, the budget split" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --out "$W/n" --workers 2 --executions 4000 --json
  json_is "not j['found'] and j['executions'] >= 4000 and j['corpus_size'] >= 3" "nothing --json"
  expect 2 "--workers 0" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --out "$W/z" --workers 0
  says "--workers" "workers 0"
  if [[ $HAVE_TORCH == ON ]]; then
    expect 1 "two workers through LibTorch" -- "$NNFUZZ" fuzz "$M/planted-nan.pt" --output-names logits,softmax,cross_entropy,hidden --seeds "$S/zeros.npy" --out "$W/t" --workers 2 --executions 20000 --json
    json_is "j['found'] and j['workers'] == 2" "torch workers --json"
  fi
  ;;
convert)
  # The release candidates a user's conversion step makes: weights rounded to float16, and int8
  # weight-only; the candidate loads in the same engine and answers close to the original.
  for wt in f16 int8; do
    expect 0 "convert --weights $wt" -- "$NNFUZZ" convert "$M/tiny-cnn.onnx" "$W/cnn-$wt.onnx" --weights "$wt" --json
    json_is "len(j['tensors']) >= 2 and j['values'] > 1000 and 0 < j['max_abs_change'] and j['max_change_of_range'] < (0.001 if '$wt' == 'f16' else 0.01)" "convert $wt --json"
    expect 0 "the $wt candidate loads and runs (NaN hunt, nothing to find)" -- "$NNFUZZ" fuzz "$W/cnn-$wt.onnx" --seeds "$S/seeds.npy" --out "$W/n-$wt" --executions 300 --json -q
  done
  cmp -s "$M/tiny-cnn.onnx" "$W/cnn-f16.onnx" && { echo "FAIL: the f16 candidate is the original"; fails=$((fails + 1)); }
  [[ $(stat -c %s "$M/tiny-cnn.onnx") == $(stat -c %s "$W/cnn-int8.onnx") ]] ||
    { echo "FAIL: the candidate's size differs (weights are rewritten in place)"; fails=$((fails + 1)); }
  # int8 against float32 within a small L-inf ball: the disagreement objective runs on the pair.
  "$NNFUZZ" fuzz "$M/tiny-cnn.onnx" --against "$W/cnn-int8.onnx" --objective disagree --seeds "$S/seeds.npy" \
    --eps 0.05 --out "$W/d" --executions 2000 --json -q >"$W/out" 2>"$W/err"
  rc=$?
  [[ $rc == 0 || $rc == 1 ]] || { echo "FAIL: fuzz --against the int8 candidate: exit $rc"; head -3 "$W/err"; fails=$((fails + 1)); }
  json_is "j['objective'] == 'disagree'" "fuzz --against the int8 candidate --json"
  # .npy seeds of an image model (--input-shape C,H,W): the campaign records the geometry, so
  # `show` draws seed | found | difference. A probability moved by 1e-6 by the float16 weights.
  expect 1 "distance against the f16 candidate" -- "$NNFUZZ" fuzz "$M/tiny-cnn.onnx" --against "$W/cnn-f16.onnx" \
    --objective distance:0.000001 --seeds "$S/seeds.npy" --input-shape 1,28,28 --out "$W/p" --executions 400 --json -q
  expect 1 "show of .npy seeds with an image input shape" -- "$NNFUZZ" show "$W/p" --json
  json_is "len(j['groups']) >= 1" "show --json of the npy campaign"
  [[ -s $W/p/show/group-1.png ]] || { echo "FAIL: show wrote no PNG for .npy seeds"; fails=$((fails + 1)); }
  # Bad input: named.
  expect 2 "convert a missing file" -- "$NNFUZZ" convert "$W/none.onnx" "$W/x.onnx" --weights f16
  says "cannot read '$W/none.onnx'" "missing file named"
  head -c 300 "$M/tiny-cnn.onnx" > "$W/torn.onnx"
  expect 2 "convert a torn file" -- "$NNFUZZ" convert "$W/torn.onnx" "$W/x.onnx" --weights int8
  says "'$W/torn.onnx' is not a valid ONNX file: at byte" "torn file named with the offset"
  expect 2 "convert: an unknown --weights" -- "$NNFUZZ" convert "$M/tiny-cnn.onnx" "$W/x.onnx" --weights fp8
  [[ -e $W/x.onnx ]] && { echo "FAIL: a failed convert wrote its output"; fails=$((fails + 1)); }
  ;;
sync)
  # Two worker processes of one campaign through a sync directory, then merged.
  expect 1 "worker a" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --sync "$W/s" --worker a --executions 20000 --json
  json_is "j['found'] and j['out'] == '$W/s/a'" "worker a --json"
  expect 1 "worker b (reads a's elements)" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/seeds.npy" --sync "$W/s" --worker b --executions 20000 --max-findings 0 --json
  "$PY" -c "import json; j=json.load(open('$W/s/b/stats.json')); assert j['imported'] >= 1, j['imported']" ||
    { echo "FAIL: worker b imported nothing (SYNC/b/stats.json)"; fails=$((fails + 1)); }
  [[ -f $W/s/a/session.json ]] || { echo "FAIL: no SYNC/a/session.json"; fails=$((fails + 1)); }
  expect 1 "whatsup of a worker" -- "$NNFUZZ" whatsup "$W/s/a" --json
  json_is "j['findings'] >= 1 and 'last_session' in j" "whatsup worker --json"
  expect 1 "worker a resumes" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --sync "$W/s" --worker a --executions 2000 --json
  json_is "j['resumed']" "worker a resumed"
  expect 1 "merge of the sync directory" -- "$NNFUZZ" merge "$W/m" "$W/s" --json
  json_is "len(j['campaigns']) == 2" "merge sync --json"
  expect 1 "whatsup of the merge" -- "$NNFUZZ" whatsup "$W/m"
  # whatsup of the sync directory itself: one entry per worker, the totals add up.
  expect 1 "whatsup of the sync directory" -- "$NNFUZZ" whatsup "$W/s" --json
  json_is "[w['worker'] for w in j['workers']] == ['a', 'b'] and j['unique_findings'] >= 1 and j['executions'] == sum(w['executions'] for w in j['workers']) and j['finding_files'] >= 1" "whatsup sync --json"
  expect 1 "whatsup of the sync directory, text" -- "$NNFUZZ" whatsup "$W/s"
  grep -qE "^campaign $W/s: 2 workers \(0 alive\)" "$W/out" || { echo "FAIL: whatsup sync text: $(cat "$W/out")"; fails=$((fails + 1)); }
  expect 0 "whatsup --csv of the sync directory" -- "$NNFUZZ" whatsup "$W/s" --csv
  head -n1 "$W/out" | grep -q '^worker,unix_time,' || { echo "FAIL: whatsup --csv header: $(head -n1 "$W/out")"; fails=$((fails + 1)); }
  expect 2 "whatsup --csv of a campaign directory" -- "$NNFUZZ" whatsup "$W/s/a" --csv
  says "--csv is for a sync directory" "csv of a campaign"
  expect 2 "whatsup --csv and --json" -- "$NNFUZZ" whatsup "$W/s" --csv --json
  says "give one" "csv and json"
  cp -r "$W/s" "$W/sbad" && echo '{"worker": "b", "executions": "many"}' > "$W/sbad/b/stats.json"
  expect 2 "whatsup of a sync directory with a malformed stats.json" -- "$NNFUZZ" whatsup "$W/sbad"
  says "$W/sbad/b/stats.json': key 'executions' is \"many\", not a number" "malformed stats.json"
  # A program's campaign (no nnfuzz.json) merges with its like, not with the command's.
  mkdir -p "$W/prog" && cp -r "$W/s/a" "$W/prog/a" && rm "$W/prog/a/nnfuzz.json"
  expect 2 "merge of the command's and a program's campaigns" -- "$NNFUZZ" merge "$W/mx" "$W/s/a" "$W/prog/a"
  says "has no nnfuzz.json" "mixed merge"
  expect 1 "merge of a program's sync directory" -- "$NNFUZZ" merge "$W/mp" "$W/prog" --radius 0.05 --json
  json_is "not j['nnfuzz_json'] and j['finding_files_written'] >= 1" "program merge --json"
  [[ ! -e $W/mp/nnfuzz.json && -f $W/mp/corpus.bin ]] || { echo "FAIL: program merge wrote nnfuzz.json or no corpus.bin"; fails=$((fails + 1)); }
  expect 2 "--sync without --worker" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --sync "$W/s"
  says "--worker" "no worker"
  expect 2 "--worker without --sync" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --out "$W/x" --worker a
  says "--sync" "no sync"
  expect 2 "--sync and --out" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --sync "$W/s" --worker c --out "$W/x"
  says "--out" "sync and out"
  expect 2 "a bad worker id" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --sync "$W/s" --worker ../up
  says "'../up' is not a worker id" "bad id"
  expect 2 "--sync and --workers" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --sync "$W/s" --worker c --workers 2
  says "--workers" "sync and workers"
  expect 2 "a worker of another campaign" -- "$NNFUZZ" fuzz "$M/tiny-mlp.onnx" --seeds "$S/seeds.npy" --sync "$W/s" --worker c
  says "runs another campaign" "another campaign"
  touch "$W/afile"
  expect 2 "an unwritable --sync" -- "$NNFUZZ" fuzz "$M/planted-nan.onnx" --seeds "$S/pngs" --sync "$W/afile" --worker c
  says "--sync" "unwritable sync"
  ;;
prepare)
  # nnfuzz prepare on a file OpenCV already loads: the rewrite keeps what it computes (the
  # check: a batch of 3 equals its rows alone), and the prepared file fuzzes like the original.
  expect 0 "prepare a CNN" -- "$NNFUZZ" prepare "$M/tiny-cnn.onnx" "$W/cnn-p.onnx"
  grep -qF "a batch of 3 matches its rows run alone" "$W/out" || { echo "FAIL: prepare printed no check:"; head -3 "$W/out" "$W/err"; fails=$((fails + 1)); }
  expect 0 "the prepared CNN fuzzes" -- "$NNFUZZ" fuzz "$W/cnn-p.onnx" --seeds "$S/seeds.npy" --out "$W/f" --executions 300 --json -q
  # The file's input is N x 784: a shape of another rank is named, not a Python assertion.
  expect 2 "prepare with a shape of the wrong rank" -- "$NNFUZZ" prepare "$M/tiny-cnn.onnx" "$W/x.onnx" --input-shape 1,28,28
  says "has rank 2" "wrong rank named"
  # The same file fuzzed as given is not prepared: OpenCV loads it.
  expect 0 "a file OpenCV loads is fuzzed as given" -- "$NNFUZZ" fuzz "$M/tiny-cnn.onnx" --seeds "$S/seeds.npy" --out "$W/g" --executions 100 -q
  grep -qF "prepared copy" "$W/err" && { echo "FAIL: a loadable file was prepared"; fails=$((fails + 1)); }
  # A file exported at batch 1 fuzzes one input per forward(), said once (not once per worker).
  expect 0 "a batch-1 export is fuzzed row by row" -- "$NNFUZZ" fuzz "$M/batch1-flatten.onnx" --input-shape 1,28,28 --seeds "$S/seeds.npy" --out "$W/b1" --executions 400 --workers 2 -q
  [[ $(grep -c "one input per forward()" "$W/err") == 1 ]] || { echo "FAIL: the per-row fallback was not said exactly once:"; head -3 "$W/err"; fails=$((fails + 1)); }
  # A prepared file whose rows mix in a batch: prepare says so and still succeeds.
  expect 0 "prepare a model whose rows mix" -- "$NNFUZZ" prepare "$M/batch-mix.onnx" "$W/mix.onnx"
  grep -qF "does not run batches right" "$W/out" || { echo "FAIL: prepare did not say the rows mix"; fails=$((fails + 1)); }
  # Bad input: named, exit 2, no Python traceback.
  expect 2 "prepare a missing file" -- "$NNFUZZ" prepare "$W/none.onnx" "$W/x.onnx" --input-shape 1,28,28
  says "none.onnx" "missing file named"
  printf 'not onnx' > "$W/bad.onnx"
  expect 2 "prepare a file that is not ONNX" -- "$NNFUZZ" prepare "$W/bad.onnx" "$W/x.onnx" --input-shape 1,28,28
  says "bad.onnx" "bad file named"
  grep -q Traceback "$W/err" && { echo "FAIL: a Python traceback reached the user"; fails=$((fails + 1)); }
  expect 2 "prepare onto itself" -- "$NNFUZZ" prepare "$M/tiny-cnn.onnx" "$M/tiny-cnn.onnx"
  expect 2 "a bad --input-shape" -- "$NNFUZZ" prepare "$M/tiny-cnn.onnx" "$W/x.onnx" --input-shape 1,x,28
  says "--input-shape" "bad shape named"
  expect 2 "a missing NNFUZZ_PREPARE_SCRIPT" -- env NNFUZZ_PREPARE_SCRIPT=/nonexistent/p.py "$NNFUZZ" prepare "$M/tiny-cnn.onnx" "$W/x.onnx"
  says "NNFUZZ_PREPARE_SCRIPT: '/nonexistent/p.py'" "bad script named"
  [[ -e $W/x.onnx ]] && { echo "FAIL: a failed prepare left $W/x.onnx"; fails=$((fails + 1)); }
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
  # A user's release step with the installed command: an int8 candidate, fuzzed against the original.
  expect 0 "installed nnfuzz convert" -- nnfuzz convert "$M/tiny-cnn.onnx" "$W/cnn-int8.onnx" --weights int8
  nnfuzz fuzz "$M/tiny-cnn.onnx" --against "$W/cnn-int8.onnx" --objective disagree --seeds "$S/seeds.npy" \
    --eps 0.05 --out "$W/d" --executions 500 --json -q >"$W/out" 2>"$W/err"
  rc=$?
  [[ $rc == 0 || $rc == 1 ]] || { echo "FAIL: installed fuzz --against the candidate: exit $rc"; fails=$((fails + 1)); }
  json_is "j['objective'] == 'disagree' and j['executions'] >= 1" "installed fuzz --against --json"
  # The preparation script is installed beside the command, and the installed command runs it.
  [[ -f $W/prefix/share/nnfuzz/prepare_onnx.py ]] || { echo "FAIL: share/nnfuzz/prepare_onnx.py not installed"; fails=$((fails + 1)); }
  expect 0 "installed nnfuzz prepare" -- env NNFUZZ_PREPARE_SCRIPT="$W/prefix/share/nnfuzz/prepare_onnx.py" nnfuzz prepare "$M/tiny-cnn.onnx" "$W/cnn-p.onnx"
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
