#!/usr/bin/env python3
"""Dynamic-batch copies of ../shared/models' resnet18 and bert_mini, with onnxruntime references.

Writes OUT/{resnet18,bert_mini}/model.onnx with input dim 0 symbolic ('batch') and
test_data_set_{0,1,2} at batch 1, 3 and 32 (input/output .pb and .npy), outputs from onnxruntime.
bert_mini's export fixed the batch (1) in its Reshape targets (/Constant_1_output_0); here it is
computed, Shape(input)[0], as a dynamic export would. Then (docs/compiling.md, "Dynamic batch"):

  kiln check OUT/resnet18 --input-shape input=1..32,3,224,224     # one module, 3 batches
  kiln check OUT/bert_mini --input-shape input=1..32,128
  kiln compile OUT/resnet18/model.onnx --input-shape input=1..32,3,224,224 -o dyn.so
  kiln bench dyn.so --batch 3

Usage: /work/venv-torch/bin/python zoo/dynamic_batch_models.py [OUT] (default /tmp/dynbatch)
"""
import os, sys, numpy as np, onnx, onnxruntime as ort
from onnx import numpy_helper
out = sys.argv[1] if len(sys.argv) > 1 else '/tmp/dynbatch'
shared = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'models')
for name in ['resnet18', 'bert_mini']:
    m = onnx.load(os.path.join(shared, name, 'model.onnx'))
    for v in list(m.graph.input) + list(m.graph.output):
        d = v.type.tensor_type.shape.dim[0]
        d.ClearField('dim_value'); d.dim_param = 'batch'
    if name == 'bert_mini':
        # The export baked the batch (1) into the reshape targets as /Constant_1_output_0;
        # a dynamic export computes it: Shape(input)[0].
        from onnx import helper, TensorProto
        nodes = [n for n in m.graph.node if not (n.op_type == 'Constant' and n.output[0] == '/Constant_1_output_0')]
        assert len(nodes) == len(m.graph.node) - 1
        new = [helper.make_node('Shape', ['input'], ['/batch_shape']),
               helper.make_node('Constant', [], ['/batch_index'], value=helper.make_tensor('i', TensorProto.INT64, [], [0])),
               helper.make_node('Gather', ['/batch_shape', '/batch_index'], ['/Constant_1_output_0'], axis=0)]
        del m.graph.node[:]
        m.graph.node.extend(new + nodes)
    # value_info may pin batch 1 on intermediates: drop it
    del m.graph.value_info[:]
    d = f'{out}/{name}'; os.makedirs(d, exist_ok=True)
    onnx.save(m, f'{d}/model.onnx')
    s = ort.InferenceSession(f'{d}/model.onnx', providers=['CPUExecutionProvider'])
    rng = np.random.default_rng(0)
    for k, b in enumerate([1, 3, 32]):
        if name == 'bert_mini':
            x = rng.integers(0, 1000, size=(b, 128)).astype(np.int64)
        else:
            x = rng.standard_normal((b, 3, 224, 224)).astype(np.float32)
        y = s.run(None, {'input': x})[0]
        t = f'{d}/test_data_set_{k}'; os.makedirs(t, exist_ok=True)
        open(f'{t}/input_0.pb', 'wb').write(numpy_helper.from_array(x, 'input').SerializeToString())
        open(f'{t}/output_0.pb', 'wb').write(numpy_helper.from_array(y, 'output').SerializeToString())
        np.save(f'{t}/input.npy', x); np.save(f'{t}/output.npy', y)
        print(name, b, y.shape)
