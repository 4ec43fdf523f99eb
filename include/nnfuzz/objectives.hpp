// SPDX-License-Identifier: MIT
// nnfuzz: Objective policies — which inputs of a batch are findings (all of objectives/).
//
// An Objective provides one of
//     void check(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, const Output& out, nnfuzz::Mask& hits);
//     void operator()(const Eigen::Ref<const nnfuzz::RowMatrix>& batch, const Output& out, nnfuzz::Mask& hits);
//     bool operator()(const Output& out, nnfuzz::Index row);      // any callable, one row at a time
// setting hits(r) for each row r of the batch that fires (`Output` is the model's output type;
// `hits` comes sized to the batch and cleared). For a model with structured inputs (InputLayout)
// the batch is a `const nnfuzz::InputBatch&` instead; the shipped objectives take either. And
// optionally
//     std::string describe(const Output& out, nnfuzz::Index row) const;
// naming what fired for a hit row (it becomes Finding::what). describe() is called only for hits.
#pragma once

#include "objectives/combine.hpp"
#include "objectives/differential.hpp"
#include "objectives/fitness.hpp"
#include "objectives/non_finite.hpp"
#include "objectives/text.hpp"
