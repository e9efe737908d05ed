"""A batch-B variant of a model exported at batch 1, for the GPU latency at batch 32 (prepare.sh).

  batch_variant.py MODEL.onnx B OUT.onnx

Sets dim 0 of every graph input and output to B, and the batch of 1 that exporters bake into
Reshape targets (attention's head reshapes) to B: a constant target starting with 1 copies dim 0
from its input instead (Reshape's 0), and a target concatenated from scalars (PyTorch's
`view(batch, seq, heads, -1)`) whose first scalar is a constant 1 gets B there. A Reshape whose
dim 0 is not the batch would be wrong after this: kiln compile then fails naming the node, and
the tiled reference catches anything it lets through. The test data is the batch-1
case tiled B times (run.sh tiles it): every row of the batch is the same example, so every row of
the output must match the batch-1 reference.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    src, batch, dst = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    m = onnx.load(src)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    for v in list(g.input) + list(g.output):
        if v.name in inits:
            continue
        dims = v.type.tensor_type.shape.dim
        if dims and dims[0].dim_value == 1:
            dims[0].dim_value = batch
    producers = {o: n for n in g.node for o in n.output}

    def scalar_of(name):
        t = inits[name] if name in inits else None
        if t is None and name in consts:
            t = next(a.t for a in consts[name].attribute if a.name == "value")
        a = numpy_helper.to_array(t) if t is not None else None
        return int(a.reshape(-1)[0]) if a is not None and a.size == 1 else None

    batch_name = f"kiln_batch_{batch}"
    g.initializer.append(numpy_helper.from_array(np.array([batch], dtype=np.int64), batch_name))
    patched = 0
    for n in g.node:
        if n.op_type != "Reshape":
            continue
        name = n.input[1]
        concat = producers.get(name)
        if concat is not None and concat.op_type == "Concat":
            first = producers.get(concat.input[0])
            if first is not None and first.op_type == "Unsqueeze" and scalar_of(first.input[0]) == 1:
                concat.input[0] = batch_name
                patched += 1
            continue
        if name in inits:
            t = inits[name]
        elif name in consts:
            t = next(a.t for a in consts[name].attribute if a.name == "value")
        else:
            continue  # computed from Shape: follows the batch by itself
        shape = numpy_helper.to_array(t).copy()
        if shape.size and shape[0] == 1:
            shape[0] = 0
            t.CopyFrom(numpy_helper.from_array(shape.astype(np.int64), t.name))
            patched += 1
    del g.value_info[:]
    onnx.save(m, dst)
    print(f"{dst}: batch {batch}, {patched} reshape targets made to copy the batch")


if __name__ == "__main__":
    main()
