# Compile resnet18 with kiln, run it on a NumPy image and on a PyTorch tensor (via DLPack, no copy),
# compare both with ONNX Runtime. Needs: pip install . numpy torch onnxruntime (docs/python.md).
import sys, numpy as np, onnxruntime as ort, torch, kiln
path = sys.argv[1] if len(sys.argv) > 1 else "../shared/models/resnet18/model.onnx"
model = kiln.compile(path)
image = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
(expected,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": image})
(from_numpy,) = model(input=image)
(from_torch,) = model.run({"input": torch.from_numpy(image)})
for name, y in [("numpy", from_numpy), ("torch", from_torch)]:
    print(f"{name}: max |kiln - onnxruntime| = {np.abs(y - expected).max():.2e}, allclose:", np.allclose(y, expected, rtol=1e-3, atol=1e-4))
