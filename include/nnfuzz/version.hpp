// SPDX-License-Identifier: MIT
// nnfuzz: version — the one place it is defined (CMake and Meson read it from here).
#pragma once

#define NNFUZZ_VERSION_MAJOR 0
#define NNFUZZ_VERSION_MINOR 2
#define NNFUZZ_VERSION_PATCH 0
/// 0xMMmmpp
#define NNFUZZ_VERSION 0x000200
