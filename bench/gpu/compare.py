"""kiln-runner's outputs against references (bench/gpu/run.sh); prints one verdict, exits 1 on FAIL.

  compare.py CASE_DIR OUT_DIR        OUT_DIR/NAME.npy against CASE_DIR/expected_NAME.npy, the
                                     tolerance of `kiln check`: |got - want| <= atol + rtol |want|;
                                     with CASE_DIR/tile.txt (a batch-B variant run on the batch-1
                                     input tiled B times) against the expected output tiled alike;
                                     CASE_DIR/tolerance.txt ("RTOL ATOL") overrides the tolerance
  compare.py --gemm IN_DIR OUT_DIR [nt]
                                     OUT_DIR/C.npy against A . B (A . B^T with nt; float64, cached
                                     in IN_DIR), each error over the norm of its row of A times its
                                     column of B: at most 1e-5 for float32 outputs, 1e-3 for
                                     float16 ones (their rounding alone is up to 2^-11 of |C|)
"""
import glob
import os
import sys

import numpy as np

RTOL, ATOL = 1e-3, 1e-4


def gemm(in_dir, out_dir, layout):
    ref = os.path.join(in_dir, f"reference_{layout}.npz")
    if not os.path.exists(ref):
        a, b = (np.load(os.path.join(in_dir, x + ".npy")).astype(np.float64) for x in "AB")
        b = b.T if layout == "nt" else b
        scale = np.sqrt((a * a).sum(1))[:, None] * np.sqrt((b * b).sum(0))[None, :]
        np.savez(ref, want=a @ b, scale=scale)
    r = np.load(ref)
    got = np.load(os.path.join(out_dir, "C.npy"))
    limit = 1e-3 if got.dtype == np.float16 else 1e-5
    worst = float(np.max(np.abs(got.astype(np.float64) - r["want"]) / r["scale"]))
    ok = worst <= limit
    print(f"{'PASS' if ok else 'FAIL'} (worst error {worst:.2e} of the row.column norm, limit {limit:g})")
    return 0 if ok else 1


def main():
    if sys.argv[1] == "--gemm":
        return gemm(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "nn")
    case, out = sys.argv[1], sys.argv[2]
    tile_file = os.path.join(case, "tile.txt")
    tile = int(open(tile_file).read()) if os.path.exists(tile_file) else 1
    rtol, atol = RTOL, ATOL
    tol_file = os.path.join(case, "tolerance.txt")
    if os.path.exists(tol_file):
        rtol, atol = (float(x) for x in open(tol_file).read().split())
    worst = 0.0
    for exp in sorted(glob.glob(os.path.join(case, "expected_*.npy"))):
        name = os.path.basename(exp)[len("expected_"):]
        want = np.load(exp)
        want = np.concatenate([want] * tile) if tile > 1 else want
        got = np.load(os.path.join(out, name))
        if got.shape != want.shape:
            print(f"FAIL ({name}: shape {got.shape}, expected {want.shape})")
            return 1
        err = np.abs(got.astype(np.float64) - want) / (atol + rtol * np.abs(want.astype(np.float64)))
        worst = max(worst, float(err.max()) if err.size else 0.0)
    ok = worst <= 1.0
    print(f"{'PASS' if ok else 'FAIL'} (worst error {worst:.4f} of tolerance, rtol {rtol:g} atol {atol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
