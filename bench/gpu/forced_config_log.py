"""A tuning log of one record that forces knobs of a GEMM's schedule (bench/gpu/prepare.sh).

  forced_config_log.py WORKLOAD TARGET KNOB=VALUE[,KNOB=VALUE...] OUT.json

For ablations and schedule comparisons on a GPU machine that has no kiln compiler: `kiln compile
--tuning-log OUT.json` then builds the knobs named (the others keep their defaults). The record
is not a measurement: its cost is a placeholder, and its version field says "forced-config". Each
knob's candidate index comes from CANDIDATES, the candidate lists of
schedule/templates/matmul_gpu.cc and matmul_tensorcore_gpu.cc: kiln refuses the record (and
prepare.sh stops) if those lists change and these do not.
"""
import json
import sys

CANDIDATES = {
    "threads_m": [1, 2, 4, 8, 16, 32], "threads_n": [1, 2, 4, 8, 16, 32],
    "rows_per_thread": [1, 2, 4, 8], "cols_per_thread": [1, 2, 4, 8],
    "tile_k": [1, 2, 4, 8, 16, 32], "double_buffer": [0, 1], "vector_fetch": [0, 1], "tensor_core": [0, 1],
    "warps_m": [1, 2, 4], "mma_m": [1, 2, 4], "warps_n": [1, 2, 4], "mma_n": [1, 2, 4, 8],
    "mma_k": [16, 32, 64], "pipeline_stages": [2, 3, 4], "warpgroup_mma": [0, 1], "wgmma_n": [64, 128, 256],
    "wgmma_in_flight": [0, 1], "wgmma_swizzle": [0, 1], "staging_pad": [0, 8],
}


def main():
    workload, target, knobs, out = sys.argv[1:5]
    config = {}
    for item in knobs.split(","):
        name, value = item.split("=")
        config[name] = {"index": CANDIDATES[name].index(int(value)), "values": [int(value)]}
    record = {"task": workload.split(":")[0], "workload": workload, "target": target, "config": config,
              "costs": [1.0], "error": "", "gflops": 0.0, "timestamp": 0, "version": "forced-config"}
    with open(out, "w") as f:
        f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
