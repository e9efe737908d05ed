"""kiln vs ONNX Runtime and OpenVINO latency on CPU, measured in one run (driven by compare_ort.sh).

Every side is timed the same way as `kiln bench`: warm-up calls, then samples that each repeat
the call for at least 0.1 s, median of the per-call sample times. The sides are interleaved round
by round (kiln, [kiln tuned,] ORT, ORT without spinning, OpenVINO, kiln, ...) so that load from
other users of the machine lands on all; the reported figure per side is the median of its round
medians. The ORT ratio is against the faster of the two ORT configurations.

Models are case folders MODELS_DIR/NAME/model.onnx + test_data_set_0/input_N.pb (the layout of
the ONNX backend tests, ../shared/models and zoo/export_user_models.py). A peer that cannot
load or run a model gets the reason in its table cell, and the run goes on.
"""
import argparse
import glob
import math
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

try:
    import openvino as ov
except ImportError as e:  # the table then says why in every OpenVINO cell
    ov, OV_IMPORT_ERROR = None, f"import openvino failed: {e}"

MODELS = ["resnet18", "mobilenet_v2", "squeezenet1_1", "bert_mini"]
# zoo/quantize_models.py's int8 versions of the shared models (ONNX Runtime's quantizer).
QUANTIZED = ["resnet18_int8", "mobilenet_v2_int8", "bert_mini_int8"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", required=True, help="repository root")
    p.add_argument("--models-dir", help="folder of case folders NAME/model.onnx (default: ROOT/../shared/models)")
    p.add_argument("--models", help="comma-separated names under --models-dir "
                   f"(default: {','.join(MODELS)} for the shared models, else every case folder there)")
    p.add_argument("--quantized", action="store_true",
                   help="also the int8 models zoo/quantize_models.py makes from the shared ones with ONNX Runtime's "
                   "quantization tools, in ROOT/build/quantized (made when missing); their rows report kiln int8 "
                   "against ORT int8, and kiln fp32 / kiln int8 where the fp32 model was measured too")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    p.add_argument("--repeat", type=int, default=10, help="timed samples per side per round")
    p.add_argument("--kiln", help="the kiln executable to measure (default: ROOT/build/bin/kiln)")
    p.add_argument("--target", help="kiln compile --target T (default: kiln's own, this CPU)")
    p.add_argument("--tuning-log", help="also compile with `kiln compile --tuning-log LOG` and time that "
                   "module in the same rounds (before/after columns)")
    return p.parse_args()


class Failed(Exception):
    """A side that could not run a model; its message goes into the table cell."""


def cell_text(msg, limit=90):
    """One line of a failure reason, short enough for a table cell, without Markdown pipes."""
    lines = [l.strip() for l in str(msg).splitlines() if l.strip()] or ["unknown error"]
    # OpenVINO's messages start with the source locations they passed through.
    said = [l for l in lines if not l.startswith("Exception from ")] or lines
    line = said[0].replace("|", "/")
    return "failed: " + (line if len(line) <= limit else line[:limit - 3] + "...")


# ---- the machine and the software being compared --------------------------------------------

def cpu_description():
    """/proc/cpuinfo's model name of the first CPU, with family/model (a VM may show only the
    vendor's brand, e.g. "AMD EPYC"; family 25 model 17 is then Zen 4) and the widest x86 vector
    extension the kernel reports."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    if info:
                        break  # first processor block only
                    continue
                k, _, v = line.partition(":")
                info.setdefault(k.strip(), v.strip())
    except OSError:
        return "unknown CPU (no /proc/cpuinfo)"
    flags = set(info.get("flags", "").split())
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    ident = ", ".join(f"{k} {info[v]}" for k, v in
                      [("family", "cpu family"), ("model", "model"), ("stepping", "stepping")] if v in info)
    return (f"{info.get('model name', 'unknown CPU')} ({ident}; {isa}), "
            f"{os.cpu_count()} logical CPUs")


def kiln_description(kiln):
    """Path of the binary, and the commit of the checkout it sits in (best effort: the binary
    may be older than the checkout's HEAD)."""
    desc = kiln
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(kiln))))
    try:
        rev = subprocess.run(["git", "-C", top, "log", "-1", "--format=%h %cd", "--date=short"],
                             capture_output=True, text=True, timeout=10)
        if rev.returncode == 0 and rev.stdout.strip():
            # --no-optional-locks: only read the other checkout (status may rewrite its index)
            dirty = subprocess.run(["git", "--no-optional-locks", "-C", top, "status", "--porcelain",
                                    "--untracked-files=no"], capture_output=True, text=True, timeout=10).stdout.strip()
            desc += f" (checkout at {rev.stdout.strip()}" + (", with uncommitted changes)" if dirty else ")")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return desc


def kiln_build_stamp(kiln):
    """(path, mtime, size) of the binary and the libraries beside it (../lib/*.so): another
    engineer may rebuild the kiln being measured in the middle of a run."""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(kiln))), "lib")
    stamp = []
    for path in [kiln] + sorted(glob.glob(os.path.join(lib, "*.so"))):
        try:
            st = os.stat(path)
            stamp.append((path, st.st_mtime, st.st_size))
        except OSError:
            stamp.append((path, None, None))
    return stamp


def module_cpu(so):
    """The -mcpu a compiled module records in its plan (the target resolved by kiln compile)."""
    try:
        with open(so, "rb") as f:
            data = f.read()
    except OSError:
        return None
    m = re.search(rb"llvm -mtriple=\S+ -mcpu=([A-Za-z0-9_.-]+)", data)
    return m.group(1).decode() if m else None


# ---- kiln -------------------------------------------------------------------------------------

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
        with open(so + ".log") as log:
            tail = [l for l in log.read().splitlines() if l.strip()]
        print(f"kiln compile {model} failed, see {so}.log", file=sys.stderr, flush=True)
        raise Failed(f"kiln compile status {r.returncode}: {tail[-1] if tail else ''}")
    return time.perf_counter() - t0


def kiln_median_ms(kiln, so, threads, repeat):
    r = subprocess.run([kiln, "bench", so, "--threads", str(threads), "--repeat", str(repeat)],
                       capture_output=True, text=True)
    m = re.search(r"median ([0-9.eE+-]+) ms", r.stdout)
    if r.returncode != 0 or not m:
        raise Failed(f"kiln bench status {r.returncode}: {(r.stderr or r.stdout).strip()}")
    return float(m.group(1))


# ---- inputs -----------------------------------------------------------------------------------

def graph_input_names(model):
    """The graph's real inputs, in order (older exports also list initializers as inputs)."""
    g = onnx.load(model, load_external_data=False).graph
    inits = {t.name for t in g.initializer}
    return [i.name for i in g.input if i.name not in inits]


def test_inputs(case_dir, names):
    """The case's test_data_set_0 inputs, keyed by graph input name. A TensorProto whose name is a
    graph input goes to that input; an unnamed input_N.pb is the N-th graph input (N compared as
    a number, so input_10 comes after input_9)."""
    files = glob.glob(os.path.join(case_dir, "test_data_set_0", "input_*.pb"))
    numbered = []
    for path in files:
        m = re.fullmatch(r"input_(\d+)\.pb", os.path.basename(path))
        if m:
            numbered.append((int(m.group(1)), path))
    numbered.sort()
    if len(numbered) != len(names):
        raise Failed(f"{len(numbered)} input_N.pb files for {len(names)} graph inputs ({', '.join(names)})")
    feeds = {}
    for n, path in numbered:
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        key = t.name if t.name in names else names[n] if n < len(names) else None
        if key is None or key in feeds:
            raise Failed(f"cannot match {os.path.basename(path)} (tensor name '{t.name}') to a graph input")
        feeds[key] = numpy_helper.to_array(t)
    return feeds


# ---- the peers --------------------------------------------------------------------------------

def median_call_ms(call, repeat, warmup=3, min_s=0.1):
    """What `kiln bench` does: warm-up calls, then samples of >= min_s, median per-call time."""
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(repeat):
        calls, t0 = 0, time.perf_counter()
        while True:
            call()
            calls += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_s:
                break
        samples.append(elapsed / calls)
    return statistics.median(samples) * 1e3


def ort_runner(model, threads, feeds, spinning=True):
    so = ort.SessionOptions()
    if not spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, feeds)


OV_CONFIG_KEYS = ["INFERENCE_PRECISION_HINT", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT",
                  "NUM_STREAMS", "ENABLE_CPU_PINNING", "ENABLE_HYPER_THREADING"]


def ov_runner(model, threads, feeds):
    """OpenVINO's CPU plugin in fp32 (no bf16/f16 downconversion, which it would otherwise pick
    on CPUs that have it), `threads` threads, latency hint. Inputs and outputs are shared with
    numpy rather than copied: kiln bench and ORT do not copy either."""
    if ov is None:
        raise Failed(OV_IMPORT_ERROR)
    core = ov.Core()
    compiled = core.compile_model(model, "CPU", {
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": str(threads),
        "PERFORMANCE_HINT": "LATENCY",
    })
    effective = {}
    for key in OV_CONFIG_KEYS:
        try:
            v = compiled.get_property(key)
            effective[key] = v.get_type_name() if isinstance(v, ov.Type) else v
        except Exception:  # a key this version does not report
            pass
    req = compiled.create_infer_request()
    return (lambda: req.infer(feeds, share_inputs=True, share_outputs=True)), effective


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# ---- one model --------------------------------------------------------------------------------

def measure(a, kiln, case, out_dir, name):
    """Round medians per side for one model; a side that fails holds its reason instead."""
    model = os.path.join(case, "model.onnx")
    res = {"name": name, "compile_s": None, "failed": {}, "med": {}, "cpu": None, "ov_config": None}
    runners = {}
    so = os.path.join(out_dir, name + ".so")
    try:
        res["compile_s"] = compile_model(kiln, model, so, None, a.target)
        runners["kiln"] = lambda: kiln_median_ms(kiln, so, a.threads, a.repeat)
        res["cpu"] = module_cpu(so)
    except Failed as e:
        res["failed"]["kiln"] = str(e)
    if a.tuning_log:
        tuned = os.path.join(out_dir, name + ".tuned.so")
        try:
            compile_model(kiln, model, tuned, a.tuning_log, a.target)
            runners["tuned"] = lambda: kiln_median_ms(kiln, tuned, a.threads, a.repeat)
        except Failed as e:
            res["failed"]["tuned"] = str(e)
    try:
        feeds = test_inputs(case, graph_input_names(model))
    except Exception as e:  # unreadable model or test data: the peers cannot run it
        feeds = None
        for key in ("spin", "nospin", "ov"):
            res["failed"][key] = f"test inputs: {e}"
    if feeds is not None:
        # ORT twice: its default (worker threads spin-wait) and with spinning off. On a loaded
        # machine spinning threads lose their core to other processes and ORT's default runs
        # far slower; on a quiet one spinning is faster. kiln is compared with the better one.
        for key, make in (("spin", lambda: ort_runner(model, a.threads, feeds, True)),
                          ("nospin", lambda: ort_runner(model, a.threads, feeds, False)),
                          ("ov", lambda: ov_runner(model, a.threads, feeds))):
            try:
                r = make()
                if key == "ov":
                    r, effective = r
                    res["ov_config"] = ", ".join(f"{k}={v}" for k, v in effective.items())
                    print(f"{name}: OpenVINO CPU config {res['ov_config']}", file=sys.stderr, flush=True)
                r()  # a model that loads but cannot run fails here, not in the rounds
                runners[key] = r
            except Exception as e:
                res["failed"][key] = f"{type(e).__name__}: {e}" if not isinstance(e, Failed) else str(e)
    t = {key: [] for key in runners}
    for _ in range(a.rounds):
        for key, run in list(runners.items()):
            try:
                t[key].append(run() if key in ("kiln", "tuned") else median_call_ms(run, a.repeat))
            except Exception as e:
                res["failed"][key] = str(e)
                del runners[key]
    res["med"] = {key: statistics.median(v) for key, v in t.items() if v and key not in res["failed"]}
    for key, why in res["failed"].items():
        print(f"{name}: {key} failed: {why}", file=sys.stderr, flush=True)
    print(f"{name}: round medians (ms) " + ", ".join(
        f"{key} [{' '.join('%.2f' % x for x in v)}]" for key, v in t.items()), file=sys.stderr, flush=True)
    return res


# ---- the table --------------------------------------------------------------------------------

def print_report(a, kiln, models_dir, rows, load_before, load_after, rebuilt):
    tuned = bool(a.tuning_log)
    cpus = sorted({r["cpu"] for r in rows if r["cpu"]})
    target = a.target or "llvm (kiln's default: this CPU)"
    ov_version = ov.get_version() if ov is not None else OV_IMPORT_ERROR
    print(f"\nCPU: {cpu_description()}")
    print(f"kiln: {kiln_description(kiln)}; target: {target}" + (f" -> -mcpu={', '.join(cpus)} in the modules" if cpus else ""))
    print(f"peers: onnxruntime {ort.__version__} (CPUExecutionProvider), OpenVINO {ov_version} "
          f"(CPU plugin, fp32, latency hint)")
    ov_configs = sorted({r["ov_config"] for r in rows if r["ov_config"]})
    if ov_configs:
        print("OpenVINO's compiled-model settings: " + " / ".join(ov_configs))
    print(f"models: {os.path.abspath(models_dir)}" + ("; int8 ones in build/quantized" if a.quantized else "")
          + f"; {a.threads} threads, batch 1, {a.rounds} interleaved "
          f"rounds x {a.repeat} samples (>= 0.1 s each)"
          + (f"; tuning log {a.tuning_log}" if tuned else "; untuned"))
    print()
    kiln_cols = ["kiln ms (untuned)", "kiln ms (tuned)"] if tuned else ["kiln ms"]
    sfx = [" (untuned)", " (tuned)"] if tuned else [""]
    cols = (["model"] + kiln_cols + ["ORT ms (default, spinning)", "ORT ms (spinning off)", "OpenVINO ms"]
            + [f"kiln / faster ORT{s}" for s in sfx] + [f"kiln / OpenVINO{s}" for s in sfx] + ["kiln compile s"])
    print("| " + " | ".join(cols) + " |")
    print("|---" * len(cols) + "|")
    kiln_keys = ["kiln", "tuned"] if tuned else ["kiln"]
    ratios = {(k, peer): [] for k in kiln_keys for peer in ("ort", "ov")}
    for r in rows:
        med, failed = r["med"], r["failed"]
        ms = lambda key: f"{med[key]:.2f}" if key in med else cell_text(failed.get(key, "not measured"))
        ort_best = min([med[k] for k in ("spin", "nospin") if k in med], default=None)
        cells = [r["name"]] + [ms(k) for k in kiln_keys] + [ms("spin"), ms("nospin"), ms("ov")]
        for peer, base in (("ort", ort_best), ("ov", med.get("ov"))):
            for k in kiln_keys:
                if k in med and base:
                    ratios[(k, peer)].append(med[k] / base)
                    cells.append(f"{med[k] / base:.2f}")
                else:
                    cells.append("-")
        cells.append(f"{r['compile_s']:.1f}" if r["compile_s"] is not None else "-")
        print("| " + " | ".join(cells) + " |")
    print()
    for peer, label in (("ort", "kiln / faster ORT"), ("ov", "kiln / OpenVINO")):
        parts = []
        for k, s in zip(kiln_keys, sfx):
            xs = ratios[(k, peer)]
            parts.append(f"{s.strip(' ()') or 'kiln'} {geomean(xs):.2f} over {len(xs)} models" if xs
                         else f"{s.strip(' ()') or 'kiln'}: no model measured")
        print(f"geometric mean of {label}: " + "; ".join(parts))
    kiln_ms = {r["name"]: r["med"]["kiln"] for r in rows if "kiln" in r["med"]}
    speedups = [f"{n} {kiln_ms[n[:-len('_int8')]] / ms:.2f}x" for n, ms in kiln_ms.items()
                if n.endswith("_int8") and n[:-len("_int8")] in kiln_ms]
    if speedups:
        print("kiln fp32 / kiln int8 (the int8 model's speed-up over its float original): " + ", ".join(speedups))
    if rebuilt:
        print("WARNING: the kiln binary or its libraries changed during the run (rebuilt?): "
              "rows may come from different builds, or fail; run again")
    fmt = lambda l: " ".join(f"{x:.2f}" for x in l)
    print(f"load average (1/5/15 min): before {fmt(load_before)}, after {fmt(load_after)}")


def main():
    a = parse_args()
    kiln = a.kiln or os.path.join(a.root, "build", "bin", "kiln")
    models_dir = a.models_dir or os.path.join(a.root, "..", "shared", "models")
    if a.models:
        names = [n for n in a.models.split(",") if n]
    elif a.models_dir:
        names = sorted(d for d in os.listdir(models_dir) if os.path.isfile(os.path.join(models_dir, d, "model.onnx")))
    else:
        names = MODELS
    cases = [(n, os.path.join(models_dir, n)) for n in names]
    if a.quantized:
        qdir = os.path.join(a.root, "build", "quantized")
        if not all(os.path.isfile(os.path.join(qdir, n, "model.onnx")) for n in QUANTIZED):
            subprocess.run([sys.executable, os.path.join(a.root, "zoo", "quantize_models.py"), "--out", qdir,
                            "--sets", "1"], check=True)
        cases += [(n, os.path.join(qdir, n)) for n in QUANTIZED]
    for n, case in cases:
        if not os.path.isfile(os.path.join(case, "model.onnx")):
            sys.exit(f"no model: {os.path.join(case, 'model.onnx')}")
    out_dir = os.path.join(a.root, "build", "bench-out")
    os.makedirs(out_dir, exist_ok=True)
    load_before, stamp = os.getloadavg(), kiln_build_stamp(kiln)
    rows = [measure(a, kiln, case, out_dir, n) for n, case in cases]
    load_after = os.getloadavg()
    print_report(a, kiln, models_dir, rows, load_before, load_after, kiln_build_stamp(kiln) != stamp)


if __name__ == "__main__":
    main()
