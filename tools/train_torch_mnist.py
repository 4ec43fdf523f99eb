#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Trains nnfuzz's engine models in PyTorch on the MNIST digits and exports them to ONNX and TorchScript.

Needs Debian's python3-torch and python3-onnx (scripts/setup.sh); CPU only, 2 threads, seed 1,
deterministic algorithms: the same files on every run of the same machine and packages.

Models (cached in --models like the Eigen models: a file that exists is not retrained; file names
carry the data set, the recipe and the pixel scale):
  <data>-torch-cnn-01.{onnx,pt}        conv 5x5x8 -> maxpool 2 -> conv 5x5x16 -> maxpool 2 -> dense 64 -> dense 10
                                       (ReLU), Adam; outputs "logits" and "hidden" (dense 64, after ReLU)
  <data>-torch-mlp-adam-01.{onnx,pt,bin}  784-200-100-10 ReLU, nnfuzz's `adam` recipe (He init, Adam 1e-3,
                                       weight decay 1e-4, 8,000 steps of 100); .bin = nnfuzz weights
                                       (io/weights.hpp) for Mlp<float>; outputs "logits", "hidden" (relu2)
  <data>-torch-mlp-adam-pruned90-01.{onnx,pt,bin}  the MLP's second release (the regression issue's pair):
                                       90% of each layer's weights pruned by magnitude, 1,000 fine-tuning steps
  <data>-torch-tf-nan-pm1.{onnx,pt,bin}  TensorFuzz's NaN model (`tf-nan`: U(+-0.25), SGD 0.01, 35,000 steps
                                       of 100, pixels in [-1,1]) with its unsafe softmax exp(l)/sum exp(l)
                                       and cross entropy -sum y log p (y = one-hot of the prediction);
                                       outputs "logits", "softmax", "cross_entropy", "hidden"
Every ONNX file: opset 11, input "input" (N x 784 float, dynamic batch axis), named outputs.
Every TorchScript file (torch.jit.trace): forward(x: N x 784) returns a tuple in the order of the
ONNX outputs, except the MLP, which returns a dict {"logits", "hidden"} (both ways are shown).

--test-models DIR writes small untrained models for the adapters' tests in seconds instead (no
data needed): tiny-mlp (784-32-10, also .bin), tiny-cnn, tiny-unsafe, planted-nan (a linear
unsafe model whose softmax underflows once pixel 0 exceeds ~0.03-0.08), tiny-argmax.pt (an int64
output, for the error test) and release-v1/release-v2 (784-32-16-10 with every layer an output:
logits, dense1, relu1, dense2, relu2; v2 is v1 with its second layer perturbed — two releases).

Usage: /usr/bin/python3 tools/train_torch_mnist.py [--data data/mnist] [--models out/models] [--import-nnfuzz out/models]
                                                   [--only cnn,mlp,tf-nan]
       /usr/bin/python3 tools/train_torch_mnist.py --test-models build/adapter-models
"""

import argparse
import os
import struct
import sys
import time
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1


def setup_torch():
    torch.set_num_threads(2)
    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.use_deterministic_algorithms(True)


# ---------------------------------------------------------------- data (raw or gzip IDX files)
def read_idx(path):
    opener = open
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        import gzip
        opener, path = gzip.open, path + ".gz"
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    if magic >> 8 != 0x08 or ndim not in (1, 3):
        sys.exit(f"train_torch_mnist.py: '{path}' is not an unsigned-byte IDX file (magic {magic:#x})")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        sys.exit(f"train_torch_mnist.py: '{path}' has {body.size} values, its header says {dims}")
    return body.reshape(dims)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte"))
    x = torch.from_numpy(images.reshape(images.shape[0], -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


# ---------------------------------------------------------------- the networks
class BatchOneFlatten(nn.Module):
    """An N x 1 x 28 x 28 front on an Mlp: x.view(x.size(0), -1), exported at batch 1."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x):
        return self.mlp(x.view(x.size(0), -1))


class BatchMix(nn.Module):
    """An Mlp on each row plus a softmax over the whole batch flattened (x.reshape(1, -1), as a
    flatten that forgets the batch axis does): each row's answer depends on the other rows."""

    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x):
        return self.mlp(x + 784.0 * torch.softmax(x.reshape(1, -1), 1).reshape(-1, 784))


class Cnn(nn.Module):
    """conv 5x5x8 -> pool -> conv 5x5x16 -> pool -> dense 64 -> dense 10; takes N x 784."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = x.reshape(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        hidden = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(hidden), hidden


class Mlp(nn.Module):
    """A ReLU MLP (nnfuzz's Mlp): returns (logits, last hidden layer)."""

    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x), x


class DictOutput(nn.Module):
    """The MLP with a dict output {"logits", "hidden"} (TorchScript's other way of naming outputs)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        logits, hidden = self.net(x)
        return {"logits": logits, "hidden": hidden}


class Unsafe(nn.Module):
    """TensorFuzz's NaN target around an MLP: unstabilised softmax and cross entropy as outputs.

    y (one-hot of the prediction) is floor(p / max p), which ONNX importers without
    ArgMax/OneHot/Equal can run (OpenCV 4.6 also fails on `l - max l`, a Sub broadcast after a
    ReduceMax, but runs this Div): 1 for the largest probability, 0 for the others (exact ties
    count for both). Whether -sum y log p is finite does not depend on y: p_c = 0 gives
    0 * -inf = NaN where y_c = 0 and +inf where y_c = 1 (see NanTarget).
    """

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        logits, hidden = self.net(x)
        e = torch.exp(logits)
        softmax = e / e.sum(dim=1, keepdim=True)
        y = torch.floor(softmax / softmax.max(dim=1, keepdim=True)[0])
        cross_entropy = -(y * torch.log(softmax)).sum(dim=1, keepdim=True)
        return logits, softmax, cross_entropy, hidden


class Layered(nn.Module):
    """A 784-32-16-10 ReLU MLP whose every layer is an output: (logits, dense1, relu1, dense2, relu2),
    for localising where two versions part (nnfuzz's EngineOutputs::layers)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 10)

    def forward(self, x):
        dense1 = self.fc1(x)
        relu1 = F.relu(dense1)
        dense2 = self.fc2(relu1)
        relu2 = F.relu(dense2)
        return self.fc3(relu2), dense1, relu1, dense2, relu2


class Argmax(nn.Module):
    """An int64 output next to the logits (for the adapters' 'non-float output' error)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        logits, _ = self.net(x)
        return logits, logits.argmax(dim=1)


# ---------------------------------------------------------------- training
def accuracy(net, x, y):
    with torch.no_grad():
        return (net(x)[0].argmax(dim=1) == y).float().mean().item()


def train(net, x, y, steps, batch, make_opt, log, label, epochs_shuffle=True, after_step=None):
    """Minibatches drawn as epochs of a seeded permutation; plain cross entropy; after_step() after each step."""
    opt = make_opt(net.parameters())
    gen = torch.Generator().manual_seed(SEED)
    perm, pos, t0 = torch.randperm(x.shape[0], generator=gen), 0, time.time()
    for step in range(1, steps + 1):
        if pos + batch > x.shape[0]:
            perm, pos = torch.randperm(x.shape[0], generator=gen), 0
        idx = perm[pos:pos + batch]
        pos += batch
        opt.zero_grad()
        loss = F.cross_entropy(net(x[idx])[0], y[idx])
        loss.backward()
        opt.step()
        if after_step:
            after_step()
        if step % max(1, steps // 5) == 0:
            log(f"  {label}: step {step}/{steps}, loss {loss.item():.4f}, {time.time() - t0:.1f} s")
    return time.time() - t0


# ---------------------------------------------------------------- export
def export(module, example, base, output_names, dict_output=False):
    """base.onnx (opset 11, dynamic batch) and base.pt (torch.jit.trace)."""
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module if not dict_output else module.net, example, base + ".onnx", opset_version=11,
                          input_names=["input"], output_names=output_names,
                          dynamic_axes={n: {0: "batch"} for n in ["input"] + output_names})
        traced = torch.jit.trace(module, example, strict=not dict_output)
        traced.save(base + ".pt")


def save_nnfuzz_weights(path, mlp):
    """nnfuzz's weights format (include/nnfuzz/models/mlp_file.hpp): weights as inputs x outputs."""
    sizes = [mlp.layers[0].in_features] + [layer.out_features for layer in mlp.layers]
    out = bytearray(b"NNFZMLP1")
    out += struct.pack("<III", 1, 1, len(mlp.layers))
    out += struct.pack("<" + "I" * len(sizes), *sizes)
    for layer in mlp.layers:
        out += layer.weight.detach().t().contiguous().numpy().astype("<f4").tobytes()
        out += layer.bias.detach().numpy().astype("<f4").tobytes()
    out += struct.pack("<I", zlib.crc32(bytes(out)) & 0xFFFFFFFF)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)


def load_nnfuzz_weights(path):
    """An Mlp from nnfuzz's weights format (the inverse of save_nnfuzz_weights; checks the CRC)."""
    data = open(path, "rb").read()
    if data[:8] != b"NNFZMLP1" or zlib.crc32(data[:-4]) & 0xFFFFFFFF != struct.unpack("<I", data[-4:])[0]:
        sys.exit(f"train_torch_mnist.py: '{path}' is not a valid nnfuzz weights file")
    layers = struct.unpack("<I", data[16:20])[0]
    sizes = struct.unpack("<" + "I" * (layers + 1), data[20:24 + 4 * layers])
    net, pos = Mlp(list(sizes)), 24 + 4 * layers
    with torch.no_grad():
        for layer in net.layers:
            n_w, n_b = layer.in_features * layer.out_features, layer.out_features
            w = np.frombuffer(data, dtype="<f4", count=n_w, offset=pos).reshape(layer.in_features, layer.out_features)
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            pos += 4 * n_w
            layer.bias.copy_(torch.from_numpy(np.frombuffer(data, dtype="<f4", count=n_b, offset=pos).copy()))
            pos += 4 * n_b
    return net


def cached(base, exts):
    return all(os.path.exists(base + e) for e in exts)


def write_info(base, text):
    with open(base + ".txt", "w") as f:
        f.write(text + "\n")


def real_models(args, log):
    only = set(args.only.split(","))
    if only - {"cnn", "mlp", "tf-nan"}:
        sys.exit(f"train_torch_mnist.py: option --only: '{args.only}' names a model other than cnn, mlp, tf-nan")
    os.makedirs(args.models, exist_ok=True)
    name = os.path.basename(os.path.normpath(args.data))
    xtr, ytr = load_split(args.data, "train")
    xte, yte = load_split(args.data, "t10k")
    log(f"data: {xtr.shape[0]} training, {xte.shape[0]} test images from {args.data}")
    example = xte[:4].clone()

    if "cnn" in only:
        base = os.path.join(args.models, f"{name}-torch-cnn-01")
        if not cached(base, [".onnx", ".pt", ".txt"]) or args.force:
            setup_torch()
            net = Cnn()
            secs = train(net, xtr, ytr, args.cnn_steps, 64,
                         lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=1e-4), log, "cnn")
            net.eval()
            acc = accuracy(net, xte, yte)
            export(net, example, base, ["logits", "hidden"])
            write_info(base, f"cnn: Adam 1e-3, weight decay 1e-4, {args.cnn_steps} steps of 64, {secs:.0f} s; "
                             f"test accuracy {100 * acc:.2f}% on {xte.shape[0]} images (pixels [0,1])")
        log(open(base + ".txt").read().strip())
    if "mlp" in only:
        mlp_adam(args, name, xtr, ytr, xte, yte, example, log)
        mlp_pruned(args, name, xtr, ytr, xte, yte, log)
    if "tf-nan" in only:
        tf_nan(args, name, xtr, ytr, xte, yte, log)


def mlp_adam(args, name, xtr, ytr, xte, yte, example, log):
    """The MLP (nnfuzz's `adam` recipe), trained here or imported from --import-nnfuzz."""
    base = os.path.join(args.models, f"{name}-torch-mlp-adam-01")
    if not cached(base, [".onnx", ".pt", ".bin", ".txt"]) or args.force:
        setup_torch()
        nnfuzz_file = os.path.join(args.import_nnfuzz or "", f"{name}-adam-01.bin")
        if args.import_nnfuzz and os.path.exists(nnfuzz_file):
            net = load_nnfuzz_weights(nnfuzz_file).eval()
            acc = accuracy(net, xte, yte)
            export(DictOutput(net), example, base, ["logits", "hidden"], dict_output=True)
            save_nnfuzz_weights(base + ".bin", net)
            write_info(base, f"mlp-adam: 784-200-100-10, nnfuzz's adam recipe trained by mnist_train (imported from "
                             f"{nnfuzz_file}); test accuracy {100 * acc:.2f}% on {xte.shape[0]} images (pixels [0,1])")
            log(open(base + ".txt").read().strip())
            return
        net = Mlp([784, 200, 100, 10])
        for layer in net.layers:  # He init, zero bias (nnfuzz's init_truncated_normal(0))
            nn.init.trunc_normal_(layer.weight, std=(2.0 / layer.in_features) ** 0.5,
                                  a=-2 * (2.0 / layer.in_features) ** 0.5, b=2 * (2.0 / layer.in_features) ** 0.5)
            nn.init.zeros_(layer.bias)
        secs = train(net, xtr, ytr, args.mlp_steps, 100,
                     lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=1e-4), log, "mlp adam")
        net.eval()
        acc = accuracy(net, xte, yte)
        export(DictOutput(net), example, base, ["logits", "hidden"], dict_output=True)
        save_nnfuzz_weights(base + ".bin", net)
        write_info(base, f"mlp-adam: 784-200-100-10, AdamW 1e-3, weight decay 1e-4, {args.mlp_steps} steps of 100, "
                         f"{secs:.0f} s; test accuracy {100 * acc:.2f}% on {xte.shape[0]} images (pixels [0,1])")
    log(open(base + ".txt").read().strip())


def prune_magnitude(net, fraction):
    """nnfuzz's prune_magnitude() (models/prune.hpp): in each layer the round(fraction x weights) weights
    of smallest |w| set to 0 (ties by position in nnfuzz's inputs x outputs order); returns the masks."""
    masks = []
    with torch.no_grad():
        for layer in net.layers:
            w = layer.weight.t().contiguous().flatten()
            mask = torch.ones_like(w)
            mask[torch.argsort(w.abs(), stable=True)[:int(round(fraction * w.numel()))]] = 0
            mask = mask.view(layer.in_features, layer.out_features).t().contiguous()
            layer.weight.mul_(mask)
            masks.append(mask)
    return masks


def mlp_pruned(args, name, xtr, ytr, xte, yte, log):
    """The second release of the MLP (the regression issue's pair): 90% of each layer's weights pruned by
    magnitude, then 1,000 fine-tuning steps (AdamW 1e-3) with the pruned weights kept at zero."""
    base = os.path.join(args.models, f"{name}-torch-mlp-adam-pruned90-01")
    if not cached(base, [".onnx", ".pt", ".bin", ".txt"]) or args.force:
        setup_torch()
        net = load_nnfuzz_weights(os.path.join(args.models, f"{name}-torch-mlp-adam-01.bin"))
        before = accuracy(net.eval(), xte, yte)
        masks = prune_magnitude(net, 0.9)

        def reapply():
            with torch.no_grad():
                for layer, mask in zip(net.layers, masks):
                    layer.weight.mul_(mask)

        secs = train(net.train(), xtr, ytr, 1000, 100, lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=1e-4),
                     log, "mlp pruned 90%", after_step=reapply)
        net.eval()
        acc = accuracy(net, xte, yte)
        example = xte[:4].clone()
        export(DictOutput(net), example, base, ["logits", "hidden"], dict_output=True)
        save_nnfuzz_weights(base + ".bin", net)
        write_info(base, f"mlp-adam pruned 90%: {name}-torch-mlp-adam-01 with 90% of each layer's weights pruned by "
                         f"magnitude, 1000 fine-tuning steps of 100 ({secs:.0f} s); test accuracy "
                         f"{100 * before:.2f}% -> {100 * acc:.2f}% on {xte.shape[0]} images (pixels [0,1])")
    log(open(base + ".txt").read().strip())


def tf_nan(args, name, xtr, ytr, xte, yte, log):
    base = os.path.join(args.models, f"{name}-torch-tf-nan-pm1")
    if not cached(base, [".onnx", ".pt", ".bin", ".txt"]) or args.force:
        setup_torch()
        xpm, xtepm = xtr * 2 - 1, xte * 2 - 1
        nnfuzz_file = os.path.join(args.import_nnfuzz or "", f"{name}-tf-nan-pm1.bin")
        if args.import_nnfuzz and os.path.exists(nnfuzz_file):
            net, secs, how = load_nnfuzz_weights(nnfuzz_file), 0, f"trained by nnfuzz's mnist_train (imported from {nnfuzz_file})"
        else:
            net = Mlp([784, 200, 100, 10])
            for layer in net.layers:  # TensorFuzz's U(-0.25, 0.25), zero bias
                nn.init.uniform_(layer.weight, -0.25, 0.25)
                nn.init.zeros_(layer.bias)
            secs = train(net, xpm, ytr, args.nan_steps, 100, lambda p: torch.optim.SGD(p, lr=0.01), log, "tf-nan")
            how = f"{args.nan_steps} steps of 100 in PyTorch, {secs:.0f} s"
        net.eval()
        acc = accuracy(net, xtepm, yte)
        unsafe = Unsafe(net)
        with torch.no_grad():
            outs = unsafe(torch.cat([xpm, xtepm]))
            nonfinite = int((~torch.isfinite(torch.cat([o.flatten(1) for o in outs], 1))).any(dim=1).sum())
            spread = (outs[0].max(1)[0] - outs[0].min(1)[0]).max().item()
        export(unsafe, xtepm[:4].clone(), base, ["logits", "softmax", "cross_entropy", "hidden"])
        save_nnfuzz_weights(base + ".bin", net)
        write_info(base, f"tf-nan: 784-200-100-10, U(+-0.25), SGD 0.01, {how}; "
                         f"test accuracy {100 * acc:.2f}% on {xte.shape[0]} images (pixels [-1,1]); "
                         f"{nonfinite} data-set images give a non-finite output; largest logit spread {spread:.1f}")
    log(open(base + ".txt").read().strip())


def test_models(out, log):
    """Small untrained models for the adapters' tests (seconds, no data)."""
    os.makedirs(out, exist_ok=True)
    setup_torch()
    example = torch.rand(4, 784)
    mlp = Mlp([784, 32, 10])
    export(mlp, example, os.path.join(out, "tiny-mlp"), ["logits", "hidden"])
    save_nnfuzz_weights(os.path.join(out, "tiny-mlp.bin"), mlp)
    export(DictOutput(mlp), example, os.path.join(out, "tiny-mlp-dict"), ["logits", "hidden"], dict_output=True)
    export(Cnn(), example, os.path.join(out, "tiny-cnn"), ["logits", "hidden"])
    export(Unsafe(Mlp([784, 32, 10])), example, os.path.join(out, "tiny-unsafe"),
           ["logits", "softmax", "cross_entropy", "hidden"])
    # The planted bug: logit 0 = -80 - 300 * pixel0, the others 0. On seeds with pixel 0 = 0 the
    # spread is 80 (p0 = e^-80 / 9, a normal float: finite everywhere); past pixel0 ~ 0.03 the
    # spread passes ~88 (exp gives subnormals, which engines that flush them turn into 0), past
    # ~0.08 it passes ~104 and p0 underflows to 0 in any case: the cross entropy is 0 * log 0 = NaN.
    planted = Mlp([784, 10])
    with torch.no_grad():
        planted.layers[0].weight.zero_()
        planted.layers[0].bias.zero_()
        planted.layers[0].weight[0, 0] = -300.0
        planted.layers[0].bias[0] = -80.0
    export(Unsafe(planted), torch.zeros(4, 784), os.path.join(out, "planted-nan"),
           ["logits", "softmax", "cross_entropy", "hidden"])
    torch.jit.trace(Argmax(mlp).eval(), example).save(os.path.join(out, "tiny-argmax.pt"))
    # Two releases of one network: release-v2 is release-v1 re-exported with its second layer
    # changed (as fine-tuning that layer alone would): dense1 and relu1 agree, dense2 parts.
    v1 = Layered()
    layers = ["logits", "dense1", "relu1", "dense2", "relu2"]
    export(v1, example, os.path.join(out, "release-v1"), layers)
    v2 = Layered()
    v2.load_state_dict(v1.state_dict())
    with torch.no_grad():
        v2.fc2.weight.add_(0.05 * torch.randn(v2.fc2.weight.shape, generator=torch.Generator().manual_seed(2)))
    export(v2, example, os.path.join(out, "release-v2"), layers)
    # Exports that cannot run a batch in OpenCV DNN, as users make them: exported at batch 1 with
    # no dynamic axis (the flatten becomes Reshape(x, [1, 784])), and a layer that mixes the rows
    # of a batch (a softmax over the batch flattened).
    with torch.no_grad():
        torch.onnx.export(BatchOneFlatten(mlp).eval(), torch.rand(1, 1, 28, 28), os.path.join(out, "batch1-flatten.onnx"),
                          opset_version=11, input_names=["input"], output_names=["logits", "hidden"])
    export(BatchMix(mlp), example, os.path.join(out, "batch-mix"), ["logits", "hidden"])
    write_bad_code(os.path.join(out, "tiny-mlp.pt"), os.path.join(out, "bad-code.pt"))
    log(f"test models written to {out}")


def write_bad_code(good, bad):
    """A copy of the TorchScript archive `good` whose serialized code no longer compiles (a line
    of its forward() cut short): LibTorch refuses it with "expected ident but found ... here" and
    the line, which the adapter must keep in its message."""
    import zipfile
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w") as zout:
        broken = False
        for info in zin.infolist():
            data = zin.read(info.filename)
            if not broken and info.filename.endswith("code/__torch__.py") and b" = self." in data:
                lines = data.split(b"\n")
                for i, line in enumerate(lines):
                    if b" = self." in line:
                        lines[i] = line + b"(( ("
                        broken = True
                        break
                data = b"\n".join(lines)
            zout.writestr(info, data)
    if not broken:
        raise SystemExit(f"write_bad_code(): no line to break in {good}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="data/mnist", help="MNIST-format directory (train-*/t10k-* IDX files)")
    ap.add_argument("--models", default="out/models", help="model cache directory")
    ap.add_argument("--force", action="store_true", help="retrain even if the files exist")
    ap.add_argument("--cnn-steps", type=int, default=4000, help="CNN training steps (batch 64)")
    ap.add_argument("--mlp-steps", type=int, default=8000, help="MLP (adam recipe) training steps (batch 100)")
    ap.add_argument("--nan-steps", type=int, default=35000, help="NaN model (tf-nan recipe) steps (batch 100)")
    ap.add_argument("--import-nnfuzz", metavar="DIR",
                    help="take the MLP and NaN models' weights from nnfuzz's own cache (DIR/<data>-adam-01.bin, "
                         "DIR/<data>-tf-nan-pm1.bin, written by experiments/mnist_train: the same recipes, trained in "
                         "C++ in seconds) instead of training them in PyTorch; the CNN is always trained here")
    ap.add_argument("--only", default="cnn,mlp,tf-nan", metavar="LIST",
                    help="the models to make, of cnn, mlp (and its pruned release), tf-nan (default: all)")
    ap.add_argument("--test-models", metavar="DIR", help="write the adapters' small test models to DIR and stop")
    args = ap.parse_args()

    def log(msg):
        print(msg, flush=True)

    if args.test_models:
        test_models(args.test_models, log)
    else:
        real_models(args, log)


if __name__ == "__main__":
    main()
