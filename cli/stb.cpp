// SPDX-License-Identifier: MIT
// The implementations of stb_image (PNG reading) and stb_image_write (nnfuzz show), once.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
