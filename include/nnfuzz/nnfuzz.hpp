// SPDX-License-Identifier: MIT
// nnfuzz: coverage-guided fuzzing of neural networks — the umbrella header.
//
// Include this first (before Eigen) so that Eigen::half gets F16C conversions under GCC.
#pragma once

#include "detail/config.hpp"

#include "baselines.hpp"
#include "callbacks.hpp"
#include "corpus.hpp"
#include "coverage/auto.hpp"
#include "coverage/brute_force.hpp"
#include "coverage/calibrated.hpp"
#include "coverage/combine.hpp"
#include "coverage/kd_tree.hpp"
#include "coverage/neuron.hpp"
#include "coverage/nlc.hpp"
#include "coverage/no_coverage.hpp"
#include "feedback.hpp"
#include "focus.hpp"
#include "function_model.hpp"
#include "fuzz_types.hpp"
#include "fuzzer.hpp"
#include "input.hpp"
#include "mutators.hpp"
#include "objectives.hpp"
#include "objectives/logit_tolerance.hpp"
#include "parallel.hpp"
#include "regression/localize.hpp"
#include "regression/metrics.hpp"
#include "regression/report.hpp"
#include "rng.hpp"
#include "samplers.hpp"
#include "stages.hpp"
#include "tolerance.hpp"
#include "version.hpp"
