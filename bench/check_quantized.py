"""kiln against ONNX Runtime on quantized models (made by zoo/quantize_models.py): for every
test_data_set (inputs and ORT's outputs), the same top-1 class and every output within one
quantization step of the output scale (quant.json's output_step).

Dynamically quantized models (float outputs, no step) quantize each activation from its own
range at run time: a float difference in the last bit upstream (a layer norm summed in another
order) moves an element across a rounding boundary, and its whole row of products by one step.
Their outputs must stay within ORT's own quantization error on that input (max |ORT int8 - ORT
float|, from float_output_0.pb), and a top-1 class may differ only where ORT's own top two are
closer than that error (a tie at the quantization's resolution).

Usage: python bench/check_quantized.py --kiln build/bin/kiln [--target T] [--no-int8] CASE_DIR...
Exits non-zero when a case disagrees; prints one line per case.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def check_case(case, kiln, target, extra):
    with open(os.path.join(case, "quant.json")) as f:
        step = json.load(f)["output_step"]
    model = onnx.load(os.path.join(case, "model.onnx"))
    in_name, out_name = model.graph.input[0].name, model.graph.output[0].name
    name = os.path.basename(os.path.normpath(case))
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, "model.so")
        cmd = [kiln, "compile", os.path.join(case, "model.onnx"), "-o", so] + extra
        if target:
            cmd += ["--target", target]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        sets = sorted(glob.glob(os.path.join(case, "test_data_set_*")), key=lambda p: int(p.rsplit("_", 1)[1]))
        same_top1, worst, worst_at = 0, 0.0, ""
        for d in sets:
            out_dir = os.path.join(tmp, os.path.basename(d))
            subprocess.run([kiln, "run", so, "-i", f"{in_name}={os.path.join(d, 'input_0.pb')}", "--output-dir", out_dir],
                           check=True, stdout=subprocess.DEVNULL)
            got = load(os.path.join(out_dir, out_name + ".pb")).astype(np.float64)
            want = load(os.path.join(d, "output_0.pb")).astype(np.float64)
            if step:
                tol = step
                same_top1 += int(np.argmax(got) == np.argmax(want))
            else:
                tol = max(float(np.max(np.abs(want - load(os.path.join(d, "float_output_0.pb"))))), 1e-6)
                top2 = np.sort(want.reshape(-1))[-2:]
                same_top1 += int(np.argmax(got) == np.argmax(want) or top2[1] - top2[0] < tol)
            ratio = float(np.max(np.abs(got - want) / tol))
            if ratio > worst:
                worst, worst_at = ratio, os.path.basename(d)
    unit = "of one output step (%.4g)" % step if step else "of ORT's own quantization error"
    # One step exactly, up to the float rounding of two dequantized values (q - zp) * scale.
    ok = same_top1 == len(sets) and worst <= 1.0 + 1e-4
    print(f"{'PASS' if ok else 'FAIL'} {name}: top-1 equal on {same_top1}/{len(sets)} inputs"
          + ("" if step else " (or ORT's own top two within its quantization error)") + ", worst difference "
          f"{worst:.3f} {unit} ({worst_at})")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", required=True)
    p.add_argument("--target")
    p.add_argument("--no-int8", action="store_true", help="compile with kiln compile --no-int8 (the float path)")
    p.add_argument("cases", nargs="+")
    a = p.parse_args()
    extra = ["--no-int8"] if a.no_int8 else []
    results = [check_case(c, a.kiln, a.target, extra) for c in a.cases]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
