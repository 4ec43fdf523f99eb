// SPDX-License-Identifier: MIT
// nnfuzz: the metrics release gates use to compare two versions of a model, over a data set or
// over the findings of a campaign: top-1 agreement, max / mean |Δ logit|, percentiles of the KL
// divergence of the output distributions (llama.cpp's --kl-divergence), SQNR in dB (PyTorch's
// numeric suite; its own tests require >= 30 dB) — and a gate that fails on thresholds.
//
//     nnfuzz::RegressionMetrics m = nnfuzz::measure_pair(pair, test_images);
//     nnfuzz::MetricGate gate;
//     gate.min_top1_agreement = 0.99;
//     gate.max_kl_p99 = 0.05;
//     if (std::string why = gate.violations(m); !why.empty()) ...   // "KL p99 0.12 > 0.05"
#pragma once

#include "../detail/config.hpp"
#include "../detail/finite.hpp"
#include "../detail/traits.hpp"
#include "../fuzz_types.hpp"
#include "../objectives/differential.hpp"
#include "../tolerance.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace nnfuzz {

/// The p-th percentile (p in [0, 100]) of `values`, interpolated linearly between the closest
/// ranks (numpy.percentile's default): of {1, 2, 3, 4}, p 50 is 2.5 and p 90 is 3.7. Throws
/// std::invalid_argument for no values, a NaN value or p outside [0, 100].
inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) detail::fail("percentile(): no values");
  if (!(p >= 0 && p <= 100)) detail::fail("percentile(): p must be in [0, 100], got ", p);
  for (double v : values)
    if (detail::is_nan(v)) detail::fail("percentile(): a value is NaN");
  std::sort(values.begin(), values.end());
  const double at = p / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double w = at - static_cast<double>(lo);
  return w == 0 ? values[lo] : values[lo] + w * (values[hi] - values[lo]);
}

/// Signal-to-quantisation-noise ratio of a candidate tensor against the reference, in dB:
/// 10·log10(Σ reference² / Σ (reference − candidate)²) over every element (any scalar types,
/// taken as double). +infinity when the two are equal; NaN when a value is not finite. Throws
/// std::invalid_argument for sizes that differ.
template <typename A, typename B>
double sqnr_db(const Eigen::DenseBase<A>& reference, const Eigen::DenseBase<B>& candidate) {
  if (reference.rows() != candidate.rows() || reference.cols() != candidate.cols())
    detail::fail("sqnr_db(): the reference is ", reference.rows(), " x ", reference.cols(), ", the candidate ",
                 candidate.rows(), " x ", candidate.cols());
  double signal = 0, noise = 0;
  for (Index r = 0; r < reference.rows(); ++r)
    for (Index c = 0; c < reference.cols(); ++c) {
      const double a = detail::to_double(reference.derived().coeff(r, c));
      const double b = detail::to_double(candidate.derived().coeff(r, c));
      signal += a * a;
      noise += (a - b) * (a - b);
    }
  if (!detail::is_finite(signal) || !detail::is_finite(noise)) return std::numeric_limits<double>::quiet_NaN();
  if (noise == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);  // signal 0: -infinity
}

/// How two versions' logits compare over a set of rows (a data set, or the findings).
struct RegressionMetrics {
  Index rows = 0;             ///< inputs compared
  Index agreements = 0;       ///< rows whose argmax (first on ties) is the same
  double top1_agreement = 1;  ///< agreements / rows (1 for no rows)
  double max_abs_logit = 0;   ///< max |Δ logit| over every row and class
  double mean_abs_logit = 0;  ///< mean |Δ logit| over every row and class
  double kl_mean = 0;         ///< mean over rows of KL(softmax(reference) ‖ softmax(candidate)), nats
  double kl_p50 = 0;          ///< median of the per-row KL
  double kl_p90 = 0;          ///< 90th percentile of the per-row KL
  double kl_p99 = 0;          ///< 99th percentile of the per-row KL
  double kl_max = 0;          ///< largest per-row KL
  double sqnr_db = 0;         ///< SQNR of the candidate's logits against the reference's (dB)
  Index non_finite_rows = 0;  ///< rows with a non-finite logit (left out of the KL figures)
  std::vector<double> kl;     ///< per-row KL (NaN for a non-finite row), in row order
};

/// The metrics of two logit matrices (rows = inputs, one column per class): reference = old,
/// candidate = new. Throws std::invalid_argument for shapes that differ.
inline RegressionMetrics logit_metrics(const Eigen::Ref<const RowMatrix>& reference,
                                       const Eigen::Ref<const RowMatrix>& candidate) {
  if (reference.rows() != candidate.rows() || reference.cols() != candidate.cols())
    detail::fail("logit_metrics(): the reference logits are ", reference.rows(), " x ", reference.cols(),
                 ", the candidate's ", candidate.rows(), " x ", candidate.cols());
  RegressionMetrics m;
  m.rows = reference.rows();
  if (m.rows == 0 || reference.cols() == 0) return m;
  std::vector<double> finite_kl;
  double sum_abs = 0;
  m.kl.resize(static_cast<std::size_t>(m.rows));
  for (Index r = 0; r < m.rows; ++r) {
    if (argmax(reference.row(r)) == argmax(candidate.row(r))) ++m.agreements;
    for (Index c = 0; c < reference.cols(); ++c) {
      const double d = std::abs(static_cast<double>(candidate(r, c)) - static_cast<double>(reference(r, c)));
      m.max_abs_logit = std::max(m.max_abs_logit, d);
      sum_abs += d;
    }
    const double kl = output_distance(reference.row(r), candidate.row(r), OutputDistance::kl_divergence);
    m.kl[static_cast<std::size_t>(r)] = kl;
    if (detail::is_nan(kl))
      ++m.non_finite_rows;
    else
      finite_kl.push_back(kl);
  }
  m.top1_agreement = static_cast<double>(m.agreements) / static_cast<double>(m.rows);
  m.mean_abs_logit = sum_abs / static_cast<double>(reference.size());
  if (!finite_kl.empty()) {
    double s = 0;
    for (double k : finite_kl) s += k;
    m.kl_mean = s / static_cast<double>(finite_kl.size());
    m.kl_p50 = percentile(finite_kl, 50);
    m.kl_p90 = percentile(finite_kl, 90);
    m.kl_p99 = percentile(finite_kl, 99);
    m.kl_max = *std::max_element(finite_kl.begin(), finite_kl.end());
  }
  m.sqnr_db = nnfuzz::sqnr_db(reference, candidate);
  return m;
}

/// The inputs of findings, one row each (dense findings; all of one width), to measure a pair
/// over them. Throws std::invalid_argument for findings of different widths.
inline RowMatrix finding_inputs(const std::vector<Finding>& findings) {
  RowMatrix rows(static_cast<Index>(findings.size()), findings.empty() ? 0 : findings.front().input.size());
  for (std::size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].input.size() != rows.cols())
      detail::fail("finding_inputs(): finding ", i, " has ", findings[i].input.size(), " values, finding 0 has ",
                   rows.cols());
    rows.row(static_cast<Index>(i)) = findings[i].input;
  }
  return rows;
}

/// Runs a pair of versions (a model whose Output has RowMatrix members `reference` and
/// `candidate`: VersionPair, PairTarget) on `rows` in batches of `batch_size` and measures them.
/// Throws std::invalid_argument for rows of the wrong width or a batch_size below 1.
template <typename Pair>
RegressionMetrics measure_pair(Pair& pair, const Eigen::Ref<const RowMatrix>& rows, Index batch_size = 256) {
  using Out = typename std::decay_t<Pair>::Output;
  static_assert(detail::has_reference_candidate<Out>::value,
                "nnfuzz: measure_pair() needs the model's Output to have RowMatrix members `reference` and "
                "`candidate` (the old and the new logits; see VersionPair in targets/version_pair.hpp)");
  if (batch_size < 1) detail::fail("measure_pair(): option 'batch_size' must be >= 1, got ", batch_size);
  if (rows.rows() > 0 && rows.cols() != pair.input_dim())
    detail::fail("measure_pair(): the rows have ", rows.cols(), " values, the pair takes ", pair.input_dim());
  RowMatrix reference, candidate;
  Out out;
  for (Index at = 0; at < rows.rows(); at += batch_size) {
    const Index n = std::min(batch_size, rows.rows() - at);
    pair.evaluate(rows.middleRows(at, n), out);
    if (at == 0) {
      reference.resize(rows.rows(), out.reference.cols());
      candidate.resize(rows.rows(), out.candidate.cols());
    }
    reference.middleRows(at, n) = out.reference;
    candidate.middleRows(at, n) = out.candidate;
  }
  return logit_metrics(reference, candidate);
}

/// Thresholds a release gate applies to RegressionMetrics; each is off at its default.
struct MetricGate {
  double min_top1_agreement = 0;                                        ///< in [0, 1]
  double max_abs_logit = std::numeric_limits<double>::infinity();       ///< max |Δ logit|
  double max_mean_abs_logit = std::numeric_limits<double>::infinity();  ///< mean |Δ logit|
  double max_kl_p99 = std::numeric_limits<double>::infinity();          ///< KL p99, nats
  double max_kl_max = std::numeric_limits<double>::infinity();          ///< largest KL, nats
  double min_sqnr_db = -std::numeric_limits<double>::infinity();        ///< logits' SQNR, dB (PyTorch's tests: 30)
  bool allow_non_finite = false;  ///< false: a row with a non-finite logit fails an active gate

  /// True when some threshold is set.
  bool active() const {
    return min_top1_agreement > 0 || max_abs_logit < HUGE_VAL || max_mean_abs_logit < HUGE_VAL ||
           max_kl_p99 < HUGE_VAL || max_kl_max < HUGE_VAL || min_sqnr_db > -HUGE_VAL;
  }
  /// Throws std::invalid_argument naming the field for a threshold that is NaN or out of range.
  void validate() const {
    if (!(min_top1_agreement >= 0 && min_top1_agreement <= 1))
      detail::fail("MetricGate: option 'min_top1_agreement' must be in [0, 1], got ", min_top1_agreement);
    const double at_least_zero[] = {max_abs_logit, max_mean_abs_logit, max_kl_p99, max_kl_max};
    const char* names[] = {"max_abs_logit", "max_mean_abs_logit", "max_kl_p99", "max_kl_max"};
    for (int i = 0; i < 4; ++i)
      if (!(at_least_zero[i] >= 0))
        detail::fail("MetricGate: option '", names[i], "' must be >= 0, got ", at_least_zero[i]);
    if (detail::is_nan(min_sqnr_db)) detail::fail("MetricGate: option 'min_sqnr_db' is NaN");
  }
  /// Every threshold `m` breaks, as "top-1 agreement 0.97 < 0.99; KL p99 0.12 > 0.05" (empty when
  /// it passes, when no threshold is set (!active()), or when m has no rows). An active gate
  /// also fails on rows with a non-finite logit unless allow_non_finite.
  std::string violations(const RegressionMetrics& m) const {
    validate();
    std::string s;
    auto add = [&s](const std::string& part) { s += (s.empty() ? "" : "; ") + part; };
    if (m.rows == 0 || !active()) return s;
    if (m.top1_agreement < min_top1_agreement)
      add(detail::message("top-1 agreement ", m.top1_agreement, " < ", min_top1_agreement, " (", m.rows - m.agreements,
                          " of ", m.rows, " rows disagree)"));
    if (m.max_abs_logit > max_abs_logit) add(detail::message("max |dlogit| ", m.max_abs_logit, " > ", max_abs_logit));
    if (m.mean_abs_logit > max_mean_abs_logit)
      add(detail::message("mean |dlogit| ", m.mean_abs_logit, " > ", max_mean_abs_logit));
    if (m.kl_p99 > max_kl_p99) add(detail::message("KL p99 ", m.kl_p99, " > ", max_kl_p99));
    if (m.kl_max > max_kl_max) add(detail::message("KL max ", m.kl_max, " > ", max_kl_max));
    if (!(m.sqnr_db >= min_sqnr_db) && min_sqnr_db > -HUGE_VAL)
      add(detail::message("logits SQNR ", m.sqnr_db, " dB < ", min_sqnr_db, " dB"));
    if (!allow_non_finite && m.non_finite_rows > 0)
      add(detail::message(m.non_finite_rows, " row", m.non_finite_rows == 1 ? "" : "s", " with a non-finite logit"));
    return s;
  }
};

}  // namespace nnfuzz
