// SPDX-License-Identifier: MIT
// nnfuzz: ToleranceObjective — two versions whose logits differ by more than the arithmetic
// allows (tolerance.hpp: float16/bfloat16 ulps, int8 quantisation steps, float32 atol/rtol).
//
//     auto objective = nnfuzz::any_of(nnfuzz::DisagreementObjective(),
//                                     nnfuzz::ToleranceObjective(nnfuzz::Tolerance::int8(scale, 1)));
#pragma once

#include "../detail/config.hpp"
#include "../detail/traits.hpp"
#include "../tolerance.hpp"
#include "differential.hpp"

#include <string>

namespace nnfuzz {

/// Fires on a row when some logit of the candidate differs from the reference's by more than
/// its Tolerance (Polygraphy's --atol/--rtol comparison, with ulps and quantisation steps for
/// reduced formats): a difference within a float16 ulp or an int8 step is not a regression, even
/// where it flips a near-tie of the top two logits (DisagreementObjective reports those).
///
/// The model's Output must have two RowMatrix members, `reference` and `candidate` (VersionPair,
/// PairTarget). A non-finite logit against a finite one fires.
class ToleranceObjective {
 public:
  /// The logits' tolerance (e.g. Tolerance::int8(the logits' scale, 1), Tolerance::float16(2)).
  explicit ToleranceObjective(const Tolerance& logits = {}) : tolerance_(logits) { tolerance_.validate(); }
  /// Sets hits(r) when row r has a logit over its tolerance.
  template <typename Batch, typename Output>
  void check(const Batch& batch, const Output& out, Mask& hits) const {
    static_assert(detail::has_reference_candidate<Output>::value,
                  "nnfuzz: ToleranceObjective needs the model's Output to have RowMatrix members `reference` and "
                  "`candidate` (the old and the new logits; see VersionPair in targets/version_pair.hpp)");
    hits.resize(batch.rows());
    for (Index r = 0; r < batch.rows(); ++r) hits(r) = exceeds(out, r);
  }
  /// True when row r has a logit over its tolerance.
  template <typename Output>
  bool exceeds(const Output& out, Index r) const {
    const auto a = out.reference.row(r);
    const auto b = out.candidate.row(r);
    if (a.size() != b.size())
      detail::fail("ToleranceObjective::check(): ", a.size(), " reference logits against ", b.size(), " candidate");
    for (Index c = 0; c < a.size(); ++c)
      if (tolerance_.exceeded(a(c), b(c))) return true;
    return false;
  }
  /// "logit 3 off by 2.5 steps (int8, 1 step of 0.05): 1.2 -> 1.325".
  template <typename Output>
  std::string describe(const Output& out, Index row) const {
    const TensorError e = tensor_error(out.reference.row(row), out.candidate.row(row), tolerance_);
    const Index c = e.worst < 0 ? 0 : e.worst;
    return detail::message("logit ", c, " off by ", tolerance_.units(out.reference(row, c), out.candidate(row, c)),
                           tolerance_.format == NumberFormat::float32 ? "" : " ", tolerance_.unit_name(), " (",
                           tolerance_.describe(), "): ", out.reference(row, c), " -> ", out.candidate(row, c));
  }
  /// The logits' tolerance.
  const Tolerance& tolerance() const { return tolerance_; }

 private:
  Tolerance tolerance_;
};

/// A DisagreementObjective whose tie margin is a Tolerance of the candidate's logits: a
/// disagreement counts only when the candidate prefers its class by more than the tolerance —
/// float16: `ulps` float16 ulps of those logits (DisagreementObjective(0, ulps)); int8: `steps`
/// quantisation steps, steps × scale (DisagreementObjective(steps × scale), which the reference's
/// margin must exceed too); float32 with rtol 0: atol (DisagreementObjective(atol)). Throws
/// std::invalid_argument for bfloat16 and for a float32 rtol above 0, which its margins cannot
/// express (use ToleranceObjective for those).
inline DisagreementObjective disagreement_objective(const Tolerance& logits) {
  logits.validate();
  switch (logits.format) {
    case NumberFormat::float16:
      return DisagreementObjective(0.0f, static_cast<float>(logits.ulps));
    case NumberFormat::int8:
      return DisagreementObjective(static_cast<float>(logits.steps * logits.scale));
    case NumberFormat::bfloat16:
      detail::fail("disagreement_objective(): a bfloat16 tolerance (", logits.describe(),
                   ") has no DisagreementObjective margin (it counts float16 ulps); use ToleranceObjective");
    case NumberFormat::float32:
      break;
  }
  if (logits.rtol > 0)
    detail::fail("disagreement_objective(): a float32 tolerance with option 'rtol' ", logits.rtol,
                 " has no DisagreementObjective margin (an absolute one only); set rtol = 0 or use ToleranceObjective");
  return DisagreementObjective(static_cast<float>(logits.atol));
}

}  // namespace nnfuzz
