"""kiln vs ONNX Runtime latency on the shared models, measured in one run (driven by compare_ort.sh).

Both sides are timed the same way as `kiln bench`: warm-up calls, then samples that each repeat
the call for at least 0.1 s, median of the per-call sample times. They are interleaved round by
round (kiln, ORT, ORT without spinning, kiln, ...) so that load from other users of the machine
lands on all; the reported figure per side is the median of its round medians. The ratio is
against the faster of the two ORT configurations.
"""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_1", "bert_mini"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--root", required=True, help="repository root")
    p.add_argument("--models-dir", help="default: ROOT/../shared/models")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="interleaved kiln/ORT rounds")
    p.add_argument("--repeat", type=int, default=10, help="timed samples per side per round")
    p.add_argument("--kiln", help="the kiln executable to measure (default: ROOT/build/bin/kiln)")
    p.add_argument("--target", help="kiln compile --target T (default: this CPU)")
    p.add_argument("--tuning-log", help="also compile with `kiln compile --tuning-log LOG` and time that "
                   "module in the same rounds (before/after columns)")
    return p.parse_args()


def compile_model(kiln, model, so, tuning_log, target=None):
    """Wall time of `kiln compile`; its notes go to SO.log so the table stays readable."""
    cmd = [kiln, "compile", model, "-o", so]
    if target:
        cmd += ["--target", target]
    if tuning_log:
        cmd += ["--tuning-log", tuning_log]
    t0 = time.perf_counter()
    with open(so + ".log", "w") as log:
        r = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit(f"kiln compile failed (status {r.returncode}), see {so}.log")
    return time.perf_counter() - t0


def kiln_median_ms(kiln, so, threads, repeat):
    out = subprocess.run([kiln, "bench", so, "--threads", str(threads), "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"median ([0-9.eE+-]+) ms", out)
    if not m:
        sys.exit(f"cannot read a median from kiln bench output:\n{out}")
    return float(m.group(1))


def ort_session(model, threads, spinning=True):
    so = ort.SessionOptions()
    if not spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def ort_inputs(sess, case_dir):
    """The model's own test inputs, in the order of the graph's inputs."""
    files = sorted(glob.glob(os.path.join(case_dir, "test_data_set_0", "input_*.pb")))
    feeds = {}
    for meta, path in zip(sess.get_inputs(), files):
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        feeds[meta.name] = numpy_helper.to_array(t)
    return feeds


def ort_median_ms(sess, feeds, repeat, warmup=3, min_s=0.1):
    for _ in range(warmup):
        sess.run(None, feeds)
    samples = []
    for _ in range(repeat):
        calls, t0 = 0, time.perf_counter()
        while True:
            sess.run(None, feeds)
            calls += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_s:
                break
        samples.append(elapsed / calls)
    return statistics.median(samples) * 1e3


def main():
    a = parse_args()
    kiln = a.kiln or os.path.join(a.root, "build", "bin", "kiln")
    models_dir = a.models_dir or os.path.join(a.root, "..", "shared", "models")
    out_dir = os.path.join(a.root, "build", "bench-out")
    os.makedirs(out_dir, exist_ok=True)
    load_before = os.getloadavg()
    rows = []
    for name in a.models.split(","):
        case = os.path.join(models_dir, name)
        model = os.path.join(case, "model.onnx")
        so = os.path.join(out_dir, name + ".so")
        compile_s = compile_model(kiln, model, so, None, a.target)
        modules = {"kiln": so}
        if a.tuning_log:
            modules["tuned"] = os.path.join(out_dir, name + ".tuned.so")
            compile_model(kiln, model, modules["tuned"], a.tuning_log, a.target)
        # ORT twice: its default (worker threads spin-wait) and with spinning off. On a loaded
        # machine spinning threads lose their core to other processes and ORT's default runs
        # far slower; on a quiet one spinning is faster. kiln is compared with the better one.
        sessions = {"spin": ort_session(model, a.threads, spinning=True),
                    "nospin": ort_session(model, a.threads, spinning=False)}
        feeds = ort_inputs(sessions["spin"], case)
        t = {key: [] for key in list(modules) + list(sessions)}
        for _ in range(a.rounds):
            for key, path in modules.items():
                t[key].append(kiln_median_ms(kiln, path, a.threads, a.repeat))
            for key, sess in sessions.items():
                t[key].append(ort_median_ms(sess, feeds, a.repeat))
        med = {key: statistics.median(v) for key, v in t.items()}
        rows.append((name, med, compile_s))
        print(f"{name}: round medians (ms) " + ", ".join(
            f"{key} [{' '.join('%.2f' % x for x in v)}]" for key, v in t.items()), file=sys.stderr, flush=True)
    load_after = os.getloadavg()

    print(f"\n{a.threads} threads, batch 1, {a.rounds} interleaved rounds x {a.repeat} samples "
          f"(>= 0.1 s each); onnxruntime {ort.__version__}"
          + (f"; tuning log {a.tuning_log}" if a.tuning_log else "; untuned"))
    tuned = bool(a.tuning_log)
    print("| model | kiln ms" + (" (untuned) | kiln ms (tuned)" if tuned else "")
          + " | ORT ms (default, spinning) | ORT ms (spinning off) | kiln / faster ORT"
          + (" (untuned) | kiln / faster ORT (tuned)" if tuned else "") + " | kiln compile s |")
    print("|---" * (8 if tuned else 6) + "|")
    for n, m, c in rows:
        best = min(m["spin"], m["nospin"])
        kiln_ms = f"{m['kiln']:.2f}" + (f" | {m['tuned']:.2f}" if tuned else "")
        ratios = f"{m['kiln'] / best:.2f}" + (f" | {m['tuned'] / best:.2f}" if tuned else "")
        print(f"| {n} | {kiln_ms} | {m['spin']:.2f} | {m['nospin']:.2f} | {ratios} | {c:.1f} |")
    fmt = lambda l: " ".join(f"{x:.2f}" for x in l)
    print(f"load average (1/5/15 min): before {fmt(load_before)}, after {fmt(load_after)}")


if __name__ == "__main__":
    main()
