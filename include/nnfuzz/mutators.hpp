// SPDX-License-Identifier: MIT
// nnfuzz: Mutator policies (all of mutators/): dense rows (mutators/dense.hpp) and structured
// inputs, token sequences and inputs of several parts (mutators/structured.hpp).
#pragma once

#include "mutators/default.hpp"
#include "mutators/dense.hpp"
#include "mutators/structured.hpp"
