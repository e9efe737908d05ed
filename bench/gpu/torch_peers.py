"""PyTorch (cuDNN, cuBLAS; TF32 off) on the same GPU, in the same run as kiln (bench/gpu/run.sh).

Each figure is measured as kiln-runner measures a run: the input copied from host memory,
the model, the output copied back, synchronized; 3 warm-ups, median of REPEAT. The models are
the shared models' architectures with random weights (torchvision; bert_mini as a transformers
BERT of its shape: 4 layers, hidden 256, 4 heads, FFN 1024, sequence 128; resnet18_b32 and
bert_mini_b32 at batch 32; NAME_fp16 the same in float16, `model.half()`). GEMMs (cuBLAS) with
the operands on the GPU, timed as kiln-runner --device-inputs times kiln's: host clock around the
product and a synchronize; CUDA events' time beside it.

  torch_peers.py BUNDLE [REPEAT]
"""
import os
import statistics
import sys
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True


def end_to_end(fn, x, repeat):
    with torch.no_grad():
        for _ in range(3):
            fn(x.cuda()).cpu()
        ts = []
        for _ in range(repeat):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(x.cuda()).cpu()
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


def models():
    import torchvision
    yield "mobilenet_v2", torchvision.models.mobilenet_v2(), torch.randn(1, 3, 224, 224)
    yield "mobilenet_v2_fp16", torchvision.models.mobilenet_v2().half(), torch.randn(1, 3, 224, 224).half()
    yield "squeezenet1_1", torchvision.models.squeezenet1_1(), torch.randn(1, 3, 224, 224)
    yield "resnet18", torchvision.models.resnet18(), torch.randn(1, 3, 224, 224)
    yield "resnet18_b32", torchvision.models.resnet18(), torch.randn(32, 3, 224, 224)
    yield "resnet18_fp16", torchvision.models.resnet18().half(), torch.randn(1, 3, 224, 224).half()
    from transformers import BertConfig, BertModel
    cfg = BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
    bert = BertModel(cfg).cuda().eval()
    yield "bert_mini", lambda ids: bert(ids).pooler_output, torch.randint(0, 1000, (1, 128))
    yield "bert_mini_b32", lambda ids: bert(ids).pooler_output, torch.randint(0, 1000, (32, 128))
    bert_half = BertModel(cfg).cuda().eval().half()
    yield "bert_mini_fp16", lambda ids: bert_half(ids).pooler_output, torch.randint(0, 1000, (1, 128))
    yield "bert_mini_b32_fp16", lambda ids: bert_half(ids).pooler_output, torch.randint(0, 1000, (32, 128))


def main():
    bundle = sys.argv[1]
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    print(f"PyTorch {torch.__version__}, {torch.cuda.get_device_name()}, TF32 off")
    present = set(os.listdir(os.path.join(bundle, "cases"))) if os.path.isdir(os.path.join(bundle, "cases")) else set()
    for name, model, x in models():
        if name not in present:
            continue
        m = model.cuda().eval() if isinstance(model, torch.nn.Module) else model
        med, lo = end_to_end(m, x, repeat)
        print(f"{name}: torch latency median {med:.4f} ms, min {lo:.4f} ms over {repeat} runs")
    gemm_dir = os.path.join(bundle, "gemm")
    names = os.listdir(gemm_dir) if os.path.isdir(gemm_dir) else []
    gemms = sorted({(d.split("_")[0], d.split("_")[1], "nt" if "_nt_" in d else "nn") for d in names})
    for dtype, n, layout in gemms:
        n = int(n)
        a, b = (torch.randn(n, n, dtype=getattr(torch, dtype), device="cuda") for _ in range(2))
        b = b.t() if layout == "nt" else b  # cuBLAS's transposed operand, as kiln's nt module
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        host, dev = [], []
        for i in range(33):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            torch.matmul(a, b)
            stop.record()
            torch.cuda.synchronize()
            if i >= 3:
                host.append((time.perf_counter() - t0) * 1e3)
                dev.append(start.elapsed_time(stop))
        med = statistics.median(host)
        print(f"gemm {dtype} {n}{' nt' if layout == 'nt' else ''}: torch (cuBLAS) latency median {med:.4f} ms ({2 * n ** 3 / med / 1e9:.1f} TFLOP/s), "
              f"CUDA events median {statistics.median(dev):.4f} ms")


if __name__ == "__main__":
    main()
