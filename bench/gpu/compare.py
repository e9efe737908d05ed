"""kiln-runner's outputs against references (bench/gpu/run.sh); prints one verdict, exits 1 on FAIL.

  compare.py CASE_DIR OUT_DIR        OUT_DIR/NAME.npy against CASE_DIR/expected_NAME.npy, the
                                     tolerance of `kiln check`: |got - want| <= atol + rtol |want|;
                                     with CASE_DIR/tile.txt (a batch-B variant run on the batch-1
                                     input tiled B times) against the expected output tiled alike
  compare.py --sgemm IN_DIR OUT_DIR  OUT_DIR/C.npy against A . B (float64), rtol 1e-4 of the
                                     norm of a row of A times a column of B
"""
import glob
import os
import sys

import numpy as np

RTOL, ATOL = 1e-3, 1e-4


def main():
    if sys.argv[1] == "--sgemm":
        a, b = (np.load(os.path.join(sys.argv[2], x + ".npy")).astype(np.float64) for x in "AB")
        want = a @ b
        got = np.load(os.path.join(sys.argv[3], "C.npy"))
        scale = np.sqrt((a * a).sum(1))[:, None] * np.sqrt((b * b).sum(0))[None, :]
        worst = float(np.max(np.abs(got - want) / scale))
        ok = worst <= 1e-5
        print(f"{'PASS' if ok else 'FAIL'} (worst error {worst:.2e} of the row.column norm, limit 1e-5)")
        return 0 if ok else 1
    case, out = sys.argv[1], sys.argv[2]
    tile_file = os.path.join(case, "tile.txt")
    tile = int(open(tile_file).read()) if os.path.exists(tile_file) else 1
    worst = 0.0
    for exp in sorted(glob.glob(os.path.join(case, "expected_*.npy"))):
        name = os.path.basename(exp)[len("expected_"):]
        want = np.load(exp)
        want = np.concatenate([want] * tile) if tile > 1 else want
        got = np.load(os.path.join(out, name))
        if got.shape != want.shape:
            print(f"FAIL ({name}: shape {got.shape}, expected {want.shape})")
            return 1
        err = np.abs(got.astype(np.float64) - want) / (ATOL + RTOL * np.abs(want.astype(np.float64)))
        worst = max(worst, float(err.max()) if err.size else 0.0)
    ok = worst <= 1.0
    print(f"{'PASS' if ok else 'FAIL'} (worst error {worst:.4f} of tolerance, rtol {RTOL} atol {ATOL})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
