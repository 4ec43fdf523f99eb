#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Writes the seed files of the nnfuzz command's tests into DIR: the same kind of inputs in every
format the command reads (PNG directory, IDX, .npy, CSV), and broken ones for the error tests.
Needs numpy only (python3-torch brings it); PNGs are written by hand (zlib), no imaging library."""
import os
import struct
import sys
import zlib

import numpy as np


def png(path, img):
    """An 8-bit grayscale PNG."""
    h, w = img.shape
    raw = b"".join(b"\x00" + img[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main(out):
    os.makedirs(os.path.join(out, "pngs"), exist_ok=True)
    os.makedirs(os.path.join(out, "pngs-mixed"), exist_ok=True)
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (3, 28, 28)).astype(np.uint8)
    images[:, 0, 0] = 0  # pixel 0 = 0: the planted model is finite on the seeds
    for i, img in enumerate(images):
        png(os.path.join(out, "pngs", f"seed{i}.png"), img)
    png(os.path.join(out, "pngs-mixed", "a.png"), images[0])
    png(os.path.join(out, "pngs-mixed", "b.png"), images[0][:20, :20])
    with open(os.path.join(out, "seeds.idx"), "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 8, 3) + struct.pack(">III", 3, 28, 28) + images.tobytes())
    x = images.reshape(3, 784).astype(np.float32) / 255
    np.save(os.path.join(out, "seeds.npy"), x)
    np.save(os.path.join(out, "zeros.npy"), np.zeros((4, 784), np.float32))
    np.save(os.path.join(out, "wide.npy"), np.zeros((2, 100), np.float32))
    np.save(os.path.join(out, "range.npy"), x * 2)
    np.save(os.path.join(out, "int64.npy"), np.zeros((2, 784), np.int64))
    np.savetxt(os.path.join(out, "seeds.csv"), x, delimiter=",", fmt="%.6f", header="seed pixels", comments="")
    with open(os.path.join(out, "ragged.csv"), "w") as f:
        f.write("0,0,0\n0,0\n")
    with open(os.path.join(out, "truncated.npy"), "wb") as f:
        f.write(open(os.path.join(out, "seeds.npy"), "rb").read()[:500])


if __name__ == "__main__":
    main(sys.argv[1])
