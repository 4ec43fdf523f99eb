#!/usr/bin/env bash
# Smoke test of the examples.
# - The numbered examples (01-04) each check their own claim and exit 0 only when it holds; 04 is
#   also stopped by SIGTERM mid-campaign and resumed from its directory by a second process.
# - The MNIST examples run with a tiny budget on a tiny synthetic data set; their outputs are
#   checked (table lines parse, CSVs, PNGs, plots when gnuplot exists), so are their option
#   checks (counts such as 1e6 accepted, 1.5e0 and negative counts refused) and their failed
#   writes (a non-zero exit and a message naming the file).
#   tests/smoke_examples.sh BUILD_DIR WORK_DIR
set -euo pipefail
build="$1"
work="$2"
ex="${build}/examples"
xp="${build}/experiments"
rm -rf "${work}"
mkdir -p "${work}"

fail() { echo "smoke_examples.sh: FAIL: $*" >&2; exit 1; }

# --- Numbered examples ---------------------------------------------------------------------------
"${ex}/01_planted_bug" > "${work}/01.txt" || fail "01_planted_bug exited non-zero"
grep -q '^CGF: found the NaN' "${work}/01.txt" || fail "01_planted_bug: no NaN found"
"${ex}/05_token_model" > "${work}/05.txt" || fail "05_token_model exited non-zero"
grep -q '^CGF: stack overflow found' "${work}/05.txt" || fail "05_token_model: no overflow found"

"${ex}/02_custom_objective" > "${work}/02.txt" || fail "02_custom_objective exited non-zero"
grep -Eq '^found: dose [0-9.]+ above the limit 10\.00 at execution [0-9]+' "${work}/02.txt" || fail "02: no finding line"
grep -q 'replay: fires again' "${work}/02.txt" || fail "02: finding does not replay"

"${ex}/03_custom_mutator" > "${work}/03.txt" || fail "03_custom_mutator exited non-zero"
grep -q '^refused: SparseMutator: seed 0 pixel 0 is' "${work}/03.txt" || fail "03: check_seeds did not refuse the bad seed"
grep -Eq '^backdoor found at execution [0-9]+, .*replay: fires again' "${work}/03.txt" || fail "03: no backdoor found"

# 04 with its default temporary directory (TMPDIR), which it must remove.
mkdir -p "${work}/tmp"
TMPDIR="${work}/tmp" "${ex}/04_campaign_resume" > "${work}/04.txt" || fail "04_campaign_resume exited non-zero"
grep -Eq '^resuming .*: corpus of [0-9]+ elements' "${work}/04.txt" || fail "04: no resumed session"
grep -Eq '^[1-9][0-9]* findings on disk \([0-9]+ reported by this process\), [0-9]+ fire again' "${work}/04.txt" || fail "04: no findings"
[[ -z "$(ls -A "${work}/tmp")" ]] || fail "04: temporary directory left behind: $(ls "${work}/tmp")"
# 04 in a given directory, stopped by SIGTERM once its first checkpoint exists (an unlimited
# session: 10^9 executions, no finding limit), then resumed by a second process. The signal lands
# at any moment — after the first batch of mutants or thousands of executions and findings later
# — so every claim below must hold whatever it was: the second process resumes the checkpoint the
# first wrote (same corpus size), with the novelty radius the first had (CalibratedCoverage's
# state is kept in corpus.bin: not recalibrated against the saved corpus, which for an early stop
# chose a radius 20x smaller that found nothing in 50,000 executions, issue #34), and it goes on
# until it finds (up to 5 findings in a budget of 2,000,000 executions, 20x the most a resumed
# campaign took in 5,000 trials) and every finding on disk fires again on replay.
camp="${work}/campaign"
"${ex}/04_campaign_resume" "${camp}" 1000000000 0 > "${work}/04-stopped.txt" &
pid=$!
for _ in $(seq 1 1000); do [[ -e "${camp}/corpus.bin" ]] && break; sleep 0.01; done
kill -TERM "${pid}" 2> /dev/null || true
for _ in $(seq 1 3000); do kill -0 "${pid}" 2> /dev/null || break; sleep 0.01; done
if kill -0 "${pid}" 2> /dev/null; then kill -KILL "${pid}"; fail "04 did not stop within 30 s of SIGTERM"; fi
rc=0
wait "${pid}" || rc=$?
[[ "${rc}" == 0 ]] || fail "04 stopped by SIGTERM exited ${rc}"
checkpoint=$(sed -nE 's/^stopped by signal 15; checkpoint of ([0-9]+) elements in .*/\1/p' "${work}/04-stopped.txt")
[[ -n "${checkpoint}" ]] || fail "04: no final checkpoint after SIGTERM"
# The radius the stopped session ended with (its first batch always ran: the checkpoint exists).
radius=$(sed -nE 's/^radius: ([^ ]+) \(.*/\1/p' "${work}/04-stopped.txt" | tail -n 1)
[[ -n "${radius}" ]] || fail "04: the stopped session printed no radius"
"${ex}/04_campaign_resume" "${camp}" 2000000 5 > "${work}/04-resumed.txt" || fail "04 resuming ${camp} exited non-zero"
grep -q "^resuming ${camp}: corpus of ${checkpoint} elements" "${work}/04-resumed.txt" ||
  fail "04: second process did not resume the checkpoint of ${checkpoint} elements: $(grep '^resuming' "${work}/04-resumed.txt")"
first_radius=$(grep -m1 '^radius: ' "${work}/04-resumed.txt" || true)
[[ "${first_radius}" == "radius: ${radius} (on resume)" ]] ||
  fail "04: stopped with radius ${radius}, resumed with '${first_radius}' (recalibrated?)"
line=$(grep -E '^[0-9]+ findings on disk \([0-9]+ reported by this process\), [0-9]+ fire again' "${work}/04-resumed.txt") ||
  fail "04: no findings line"
read -r on_disk reported replayed <<< "$(sed -E 's/^([0-9]+) findings on disk \(([0-9]+) reported by this process\), ([0-9]+) fire again.*/\1 \2 \3/' <<< "${line}")"
(( on_disk >= reported && on_disk > 0 )) || fail "04: ${on_disk} findings on disk, ${reported} reported by the second process"
(( replayed == on_disk )) || fail "04: ${replayed} of ${on_disk} findings on disk fire again on replay"

# --- MNIST examples ------------------------------------------------------------------------------
"${build}/tests/make_tiny_mnist" "${work}/data" 300 100

"${xp}/mnist_train" --data "${work}/data" --models "${work}/models" --train-steps 200 \
  --recipes tf-nan,adam > "${work}/train.txt"
grep -Eq 'model tf-nan-200steps: test accuracy [0-9.]+%' "${work}/train.txt" || fail "mnist_train printed no accuracy"

"${xp}/mnist_nan" --data "${work}/data" --models "${work}/models" --out "${work}/nan" --train-steps 200 \
  --runs 2 --executions 3000 --seeds 3 > "${work}/nan.txt"
# Each table row: method run found executions seconds corpus spread what replayed.
# Each table row: baseline run found executions seconds corpus spread what replayed; 4 baselines x 2 runs.
rows=$(grep -Ec '^(random|fitness|tensorfuzz|default) +[0-9]+ +(yes|no) +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ ' "${work}/nan.txt" || true)
[[ "${rows}" == 8 ]] || fail "mnist_nan table has ${rows} rows, expected 8"
grep -Eq '^summary: NaN found in random [0-9]+/2, fitness [0-9]+/2, tensorfuzz [0-9]+/2, default [0-9]+/2 runs' \
  "${work}/nan.txt" || fail "mnist_nan summary"
# Random search is random search: its corpus stays the 3 seeds in both runs.
[[ $(grep -Ec '^random +[0-9]+ +(yes|no) +[0-9]+ +[0-9.]+ +3 ' "${work}/nan.txt") == 2 ]] || fail "mnist_nan random search grew its corpus"
for f in random-run1 random-run2 fitness-run1 tensorfuzz-run2 default-run1; do
  head -n1 "${work}/nan/csv/${f}.csv" | grep -q '^executions,corpus_size,findings$' || fail "csv ${f}"
done

"${xp}/guidance" --task nan --data "${work}/data" --models "${work}/models" --out "${work}/g" --train-steps 200 \
  --masters 1,2 --runs 2 --seeds 3 --executions 2000 --jobs 2 \
  --guidance random,tensorfuzz,calibrated,power,probabilistic,bandit,fitness,square,kmnc,nlc > "${work}/g-nan.txt"
rows=$(grep -Ec '^\| [^|]+ \| [0-2]/2 \| [0-2]/2 \| [0-9]+% \|' "${work}/g-nan.txt" || true)
[[ "${rows}" == 10 ]] || fail "guidance --task nan table has ${rows} rows, expected 10"
[[ $(wc -l < "${work}/g/data-nan/runs.csv") == 41 ]] || fail "guidance runs.csv should have 40 rows + header"
"${xp}/guidance" --task f16 --data "${work}/data" --models "${work}/models" --out "${work}/g" --train-steps 200 \
  --masters 1 --images 3 --executions 1000 --eps 0.4 --guidance random,fitness-square > "${work}/g-f16.txt"
rows=$(grep -Ec '^\| (random search \(`random`\)|fitness-square) \| [0-3]/3 \|' "${work}/g-f16.txt" || true)
[[ "${rows}" == 2 ]] || fail "guidance --task f16 table has ${rows} rows, expected 2"

"${xp}/mnist_quantization" --data "${work}/data" --models "${work}/models" --out "${work}/q" --train-steps 200 \
  --seeds 4 --executions 2000 --eps 0.4 --jobs 2 > "${work}/q.txt"
rows=$(grep -Ec '^half-(arithmetic|storage) +0.4 +(random|fitness|tensorfuzz|default) +[0-9]+/4 ' "${work}/q.txt" || true)
[[ "${rows}" == 8 ]] || fail "mnist_quantization table has ${rows} rows, expected 8"
[[ $(wc -l < "${work}/q/csv/seeds.csv") == 33 ]] || fail "seeds.csv should have 32 rows (2 twins x 4 baselines x 4 seeds) + header"
# Same flags and seed: the same table (reproducibility), whatever the number of threads.
"${xp}/mnist_quantization" --data "${work}/data" --models "${work}/models" --out "${work}/q2" --train-steps 200 \
  --seeds 4 --executions 2000 --eps 0.4 --jobs 1 > "${work}/q2.txt"
diff <(grep -E '^half-' "${work}/q.txt") <(grep -E '^half-' "${work}/q2.txt") || fail "quantization table not reproducible"

# Regression testing between model versions: every candidate, a quick run on the digits only.
"${xp}/model_regression" --data "${work}/data" --fashion "" --models "${work}/models" --out "${work}/mr" \
  --train-steps 200 --quick --seeds 3 --jobs 2 > "${work}/mr.txt"
rows=$(grep -Ec '^\| data \| (float16|int8|pruned50|pruned90|retrained) \| 0\.[12] \| (cgf|random) \| [0-9]+/[0-9]+ ' "${work}/mr/results.md" || true)
[[ "${rows}" == 20 ]] || fail "model_regression table has ${rows} rows, expected 20"
grep -q '^| data | retrained | ' "${work}/mr.txt" || fail "model_regression printed no table"
[[ $(wc -l < "${work}/mr/seeds.csv") -gt 1 ]] || fail "model_regression wrote no seeds.csv rows"
[[ -s "${work}/mr/report/report.md" && -s "${work}/mr/report/layers.csv" ]] || fail "model_regression wrote no release report"
[[ $(wc -l < "${work}/mr/report/metrics.csv") -gt 5 ]] || fail "model_regression report/metrics.csv lacks a row per candidate"

if command -v gnuplot > /dev/null; then
  [[ -s "${work}/nan/corpus_growth.png" ]] || fail "no corpus_growth.png"
  [[ -s "${work}/q/found_vs_executions.png" ]] || fail "no found_vs_executions.png"
fi

# Counts: integer-valued scientific notation is accepted; non-integers and negatives are refused.
nan_tiny=(--data "${work}/data" --models "${work}/models" --train-steps 200 --seeds 2)
"${xp}/mnist_nan" "${nan_tiny[@]}" --out "${work}/sci" --runs 1e0 --executions 1e4 --batch 1e2 > "${work}/sci.txt" \
  || fail "mnist_nan refused --executions 1e4"
grep -q '^fuzzing: 1 runs x 10000 executions, batch 100,' "${work}/sci.txt" || fail "mnist_nan misread --executions 1e4"
# Expects a non-zero exit and `text` in stderr: refuses DESCRIPTION TEXT COMMAND...
refuses() {
  local what="$1" text="$2"
  shift 2
  if "$@" > "${work}/refused.out" 2> "${work}/refused.err"; then fail "${what}: exit status 0"; fi
  grep -qF -- "${text}" "${work}/refused.err" || fail "${what}: stderr does not say '${text}': $(cat "${work}/refused.err")"
}
refuses "mnist_nan --executions 1.5e0" "--executions: '1.5e0' is not a whole number" \
  "${xp}/mnist_nan" "${nan_tiny[@]}" --out "${work}/sci" --executions 1.5e0
refuses "mnist_nan --train-steps -5" "--train-steps: '-5' is negative" "${xp}/mnist_nan" --train-steps -5
refuses "mnist_quantization --train-steps -5" "--train-steps: '-5' is negative" "${xp}/mnist_quantization" --train-steps -5
refuses "mnist_train --train-steps -5" "--train-steps: '-5' is negative" "${xp}/mnist_train" --train-steps -5
refuses "guidance --guidance bogus" "--guidance: unknown name 'bogus'" "${xp}/guidance" --guidance random,bogus
refuses "guidance --task bogus" "--task must be nan or f16" "${xp}/guidance" --task bogus
refuses "model_regression --candidates bogus" "--candidates must list" "${xp}/model_regression" --candidates bogus
refuses "model_regression --seeds 1.5" "--seeds: '1.5' is not a whole number" "${xp}/model_regression" --seeds 1.5
# A count past its option's type (2^64, one past the largest 64-bit count) is refused, not wrapped
# or saturated into a run that never ends — in every experiment driver.
big=18446744073709551616
refuses "mnist_nan --executions 2^64" "--executions: '${big}' is too large" "${xp}/mnist_nan" --executions "${big}"
refuses "mnist_nan --executions 2e19" "--executions: '2e19' is too large" "${xp}/mnist_nan" --executions 2e19
refuses "mnist_quantization --executions 2^64" "'${big}' is too large" "${xp}/mnist_quantization" --executions "${big}"
refuses "guidance --executions 2^64" "'${big}' is too large" "${xp}/guidance" --executions "${big}"
refuses "model_regression --executions 2^64" "'${big}' is too large" "${xp}/model_regression" --executions "${big}"
refuses "mnist_train --train-steps 2^64" "'${big}' is too large" "${xp}/mnist_train" --train-steps "${big}"
refuses "char_rnn --executions 2^64" "'${big}' is too large" "${xp}/char_rnn" fuzz --executions "${big}"
if [[ -x "${xp}/engines" ]]; then
  refuses "engines nan --executions 2^64" "'${big}' is too large" "${xp}/engines" nan --executions "${big}"
fi

# `nnfuzz whatsup` of a sync directory, on stats.json files it cannot trust: a count out of range,
# wrong types, not an object — each refused naming the file (exit 2); a worker that met errors
# reading its peers is listed. (The nnfuzz command is built when OpenCV DNN is found.)
nnfuzz="${build}/cli/nnfuzz"
if [[ -x "${nnfuzz}" ]]; then
  ws="${work}/whatsup-sync"
  mkdir -p "${ws}/w"
  printf '{"worker": "w", "executions": 1e300, "finished": 1}\n' > "${ws}/w/stats.json"
  refuses "whatsup: executions 1e300" "${ws}/w/stats.json': key 'executions' is 1e+300, not a count" "${nnfuzz}" whatsup "${ws}"
  printf '{"worker": "w", "host": 5, "finished": 1}\n' > "${ws}/w/stats.json"
  refuses "whatsup: host 5" "${ws}/w/stats.json': key 'host' is 5, not a string" "${nnfuzz}" whatsup "${ws}"
  printf '[1,2,3]\n' > "${ws}/w/stats.json"
  refuses "whatsup: not an object" "${ws}/w/stats.json' is not a JSON object" "${nnfuzz}" whatsup "${ws}"
  printf '{"worker": "w", "executions": 10, "finished": 1, "errors": 2, "last_error": "SyncDirectory: cannot read x"}\n' \
    > "${ws}/w/stats.json"
  "${nnfuzz}" whatsup "${ws}" > "${work}/whatsup-errors.txt" || fail "whatsup on a worker with errors (and no findings) exited non-zero"
  grep -q "w: 2 error(s) reading other workers' files, the last: SyncDirectory: cannot read x" \
    "${work}/whatsup-errors.txt" || fail "whatsup does not show the workers' errors: $(cat "${work}/whatsup-errors.txt")"
fi

# The language-model experiment (char_rnn): a tiny GRU trained for a few steps on Debian's
# fortunes, the blacklist rule on a small screen, both objectives, CGF and random search.
if [[ -d /usr/share/games/fortunes ]]; then
  cr_opts=(--hidden 16 --embed 8 --train-steps 30 --screen-chars 40000)
  cr=("${xp}/char_rnn" --models "${work}/cr-models" "${cr_opts[@]}")
  "${cr[@]}" train > "${work}/cr-train.txt" || fail "char_rnn train exited non-zero"
  grep -Eq '^held-out: [0-9.]+ bits/char' "${work}/cr-train.txt" || fail "char_rnn train: no held-out line"
  "${cr[@]}" blacklist > "${work}/cr-bl.txt" || fail "char_rnn blacklist exited non-zero"
  grep -q '^blacklist rule: ' "${work}/cr-bl.txt" || fail "char_rnn blacklist: no rule line"
  "${cr[@]}" fuzz --objective repeat --times 2 --runs 2 --executions 2000 --out "${work}/cr" \
    > "${work}/cr-fuzz.txt" || fail "char_rnn fuzz exited non-zero"
  grep -q "^## TensorFuzz's CGF: 2 runs" "${work}/cr/results-repeat.md" || fail "char_rnn: no CGF table"
  grep -q '^## random search: 2 runs' "${work}/cr/results-repeat.md" || fail "char_rnn: no random-search table"
  printf 'the\nand\n' > "${work}/cr-words.txt"
  "${cr[@]}" fuzz --blacklist "${work}/cr-words.txt" --runs 1 --executions 1000 --out "${work}/cr" \
    > "${work}/cr-fuzz2.txt" || fail "char_rnn fuzz --blacklist exited non-zero"
  grep -q 'words found by any run' "${work}/cr/results-blacklist.md" || fail "char_rnn: no blacklist table"
  # The objective matches case-insensitively: a capitalised word is spellable in either case.
  printf 'The\nAND\n' > "${work}/cr-words-caps.txt"
  "${cr[@]}" fuzz --blacklist "${work}/cr-words-caps.txt" --runs 1 --executions 200 --out "${work}/cr-caps" \
    > "${work}/cr-fuzz3.txt" 2> "${work}/cr-fuzz3.err" || fail "char_rnn fuzz --blacklist The,AND: $(cat "${work}/cr-fuzz3.err")"
  # Bad input: each a non-zero exit and a message naming the file, the option or the word.
  mkdir -p "${work}/cr-empty" "${work}/cr-latin1"
  : > "${work}/cr-empty/fortunes"
  printf 'caf\xe9\n%%\n' > "${work}/cr-latin1/fortunes"
  refuses "char_rnn: empty text file" "is empty" "${cr[@]}" --text "${work}/cr-empty" train
  refuses "char_rnn: non-UTF-8 text" "is not valid UTF-8" "${cr[@]}" --text "${work}/cr-latin1" train
  printf 'caf\xc3\xa9 au lait\n' > "${work}/cr-prompts.txt"
  refuses "char_rnn: prompt outside the alphabet" "prompt 1" "${cr[@]}" fuzz --prompts "${work}/cr-prompts.txt" \
    --objective repeat --executions 100
  printf 'na\xc3\xafve\n' > "${work}/cr-bad-words.txt"
  refuses "char_rnn: unspellable blacklist word" "cannot spell" "${cr[@]}" fuzz --blacklist "${work}/cr-bad-words.txt" \
    --executions 100
  refuses "char_rnn: not a weights file" "cr-words.txt" "${cr[@]}" --model "${work}/cr-words.txt" train
  # A model trained on another alphabet (a text of 'a', 'b' and spaces), loaded for the fortunes.
  mkdir -p "${work}/cr-ab"
  for i in $(seq 1 200); do printf 'ab %d ba\n%%\n' "${i}"; done > "${work}/cr-ab/fortunes"
  "${xp}/char_rnn" --models "${work}/cr-ab-models" "${cr_opts[@]}" --text "${work}/cr-ab" train > /dev/null ||
    fail "char_rnn: training on cr-ab failed"
  refuses "char_rnn: weights of another architecture" "trained on another alphabet" "${cr[@]}" \
    --model "$(ls "${work}"/cr-ab-models/*.bin)" train
fi

# Failed writes: a non-zero exit and a message naming the file. An --out below a regular file (no
# directory can be made there, even as root); a CSV, a plot script or stdout on /dev/full (a full disk).
touch "${work}/a-file"
nan_run=("${xp}/mnist_nan" "${nan_tiny[@]}" --runs 1 --executions 300)
refuses "mnist_nan --out under a file" "${work}/a-file/nan" "${nan_run[@]}" --out "${work}/a-file/nan"
refuses "mnist_quantization --out under a file" "${work}/a-file/q" "${xp}/mnist_quantization" --data "${work}/data" \
  --models "${work}/models" --train-steps 200 --seeds 2 --executions 300 --out "${work}/a-file/q"
refuses "mnist_train --models under a file" "${work}/a-file/models" "${xp}/mnist_train" --data "${work}/data" \
  --models "${work}/a-file/models" --train-steps 200
if [[ -c /dev/full ]]; then
  mkdir -p "${work}/full-csv/csv" "${work}/full-gp"
  ln -s /dev/full "${work}/full-csv/csv/tensorfuzz-run1.csv"
  refuses "mnist_nan CSV on a full disk" "cannot write '${work}/full-csv/csv/tensorfuzz-run1.csv'" "${nan_run[@]}" --out "${work}/full-csv"
  ln -s /dev/full "${work}/full-gp/corpus_growth.gp"
  refuses "mnist_nan plot script on a full disk" "cannot write '${work}/full-gp/corpus_growth.gp'" "${nan_run[@]}" --out "${work}/full-gp"
  mkdir -p "${work}/full-q/csv"
  ln -s /dev/full "${work}/full-q/csv/seeds.csv"
  refuses "mnist_quantization seeds.csv on a full disk" "cannot write '${work}/full-q/csv/seeds.csv'" \
    "${xp}/mnist_quantization" --data "${work}/data" --models "${work}/models" --train-steps 200 --seeds 2 \
    --executions 300 --out "${work}/full-q"
  if "${nan_run[@]}" --out "${work}/full-stdout" > /dev/full 2> "${work}/refused.err"; then fail "mnist_nan > /dev/full: exit status 0"; fi
  grep -q 'cannot write to the standard output' "${work}/refused.err" || fail "mnist_nan > /dev/full: $(cat "${work}/refused.err")"
fi
echo "smoke_examples.sh: OK"
