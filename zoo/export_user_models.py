"""Exports models the way a new kiln user would, as `kiln check` case folders.

Each model is built with random weights from a fixed seed (no download: weights=None for
torchvision, a transformers config for the transformers), exported with the TorchScript-based
`torch.onnx.export(..., opset_version=17, dynamo=False)`, and written as

    OUT/NAME/model.onnx
    OUT/NAME/test_data_set_0/input_N.pb    the seeded input(s)
    OUT/NAME/test_data_set_0/output_0.pb   what PyTorch computes in float64 (the reference)

so that `build/bin/kiln check OUT/NAME` compares kiln with PyTorch, not with another compiler.
Weights are made to behave like trained ones where a numerical check needs it: see randomise_weights.

Needs torch, torchvision, transformers, onnx and numpy (CPU wheels from PyPI are fine), e.g.
    python3 -m venv /work/venv-torch && /work/venv-torch/bin/pip install torch torchvision transformers onnx
    /work/venv-torch/bin/python zoo/export_user_models.py --out /work/usermodels [--models a,b]
    for d in /work/usermodels/*/; do build/bin/kiln check "$d"; done
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch
from onnx import numpy_helper


def torchvision_model(name):
    size = 299 if name == "inception_v3" else 224  # its auxiliary head needs 299 in train mode
    def make():
        import torchvision
        return torchvision.models.get_model(name, weights=None), [torch.randn(1, 3, size, size)]
    return make


class FirstOutput(torch.nn.Module):
    """transformers models return dataclasses; export only the main tensor. Inputs go by keyword
    (the positional order differs between models): ids, attention mask, and for encoder-decoder
    models the decoder's ids."""

    def __init__(self, model, key):
        super().__init__()
        self.model, self.key = model, key

    def forward(self, input_ids, attention_mask, decoder_input_ids=None):
        kw = {} if decoder_input_ids is None else {"decoder_input_ids": decoder_input_ids}
        return getattr(self.model(input_ids=input_ids, attention_mask=attention_mask, **kw), self.key)


def bert_tiny():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, attn_implementation="eager")
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    mask = torch.ones(1, 32, dtype=torch.int64)
    mask[0, 24:] = 0  # padded tail: the attention mask must matter
    return FirstOutput(BertModel(cfg, add_pooling_layer=False), "last_hidden_state"), [ids, mask]


def gpt2_tiny():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=1000, bos_token_id=0, eos_token_id=0, n_embd=64, n_layer=2, n_head=2, n_positions=64, use_cache=False,
                     attn_implementation="eager")
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    # With an explicit mask transformers skips its packed-sequence detection (torch.diff, which
    # the TorchScript exporter cannot export); generation code passes one anyway.
    mask = torch.ones(1, 32, dtype=torch.int64)
    return FirstOutput(GPT2LMHeadModel(cfg), "logits"), [ids, mask]


def gpt2_mini():
    """A GPT-2 style causal LM of a realistic small size: 6 layers, hidden 512, 8 heads, GPT-2's
    50257-token vocabulary (the tied LM head is a 512 x 50257 matmul per position), 128 tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=50257, n_embd=512, n_layer=6, n_head=8, n_positions=1024,
                     use_cache=False, attn_implementation="eager")
    ids = torch.randint(0, cfg.vocab_size, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)  # see gpt2_tiny
    return FirstOutput(GPT2LMHeadModel(cfg), "logits"), [ids, mask]


# One or two of each torchvision classification family (the largest members only add size).
def llama_tiny():
    """A LLaMA-style decoder: RMSNorm, rotary position embeddings, SiLU-gated MLP."""
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      use_cache=False, attn_implementation="eager", bos_token_id=0, eos_token_id=0)
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    mask = torch.ones(1, 32, dtype=torch.int64)
    return FirstOutput(LlamaForCausalLM(cfg), "logits"), [ids, mask]


def distilbert_tiny():
    from transformers import DistilBertConfig, DistilBertModel
    cfg = DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                           max_position_embeddings=64, attn_implementation="eager")
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    mask = torch.ones(1, 32, dtype=torch.int64)
    mask[0, 24:] = 0
    return FirstOutput(DistilBertModel(cfg), "last_hidden_state"), [ids, mask]


def t5_tiny():
    """An encoder-decoder: relative position buckets, RMS-style layer norm, cross-attention."""
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=1000, d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=2,
                   use_cache=False, decoder_start_token_id=0, attn_implementation="eager")
    ids = torch.randint(0, cfg.vocab_size, (1, 32))
    mask = torch.ones(1, 32, dtype=torch.int64)
    mask[0, 28:] = 0
    dec = torch.randint(0, cfg.vocab_size, (1, 16))
    return FirstOutput(T5ForConditionalGeneration(cfg), "logits"), [ids, mask, dec]


def bart_tiny():
    from transformers import BartConfig, BartForConditionalGeneration
    cfg = BartConfig(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
                     decoder_ffn_dim=128, max_position_embeddings=64, use_cache=False,
                     attn_implementation="eager")
    ids = torch.randint(3, cfg.vocab_size, (1, 32))
    mask = torch.ones(1, 32, dtype=torch.int64)
    dec = torch.randint(3, cfg.vocab_size, (1, 16))
    return FirstOutput(BartForConditionalGeneration(cfg), "logits"), [ids, mask, dec]


MODELS = {n: torchvision_model(n) for n in [
    "resnet50", "mobilenet_v3_small", "efficientnet_b0", "densenet121", "regnet_y_400mf",
    "shufflenet_v2_x1_0", "convnext_tiny", "vit_b_16",
    "alexnet", "vgg11_bn", "googlenet", "inception_v3", "mnasnet0_5", "resnext50_32x4d",
    "squeezenet1_0", "mobilenet_v3_large", "efficientnet_v2_s", "regnet_x_400mf",
    "swin_t", "swin_v2_t", "maxvit_t"]}
MODELS.update({"bert_tiny": bert_tiny, "gpt2_tiny": gpt2_tiny, "gpt2_mini": gpt2_mini,
               "llama_tiny": llama_tiny,
               "distilbert_tiny": distilbert_tiny, "t5_tiny": t5_tiny, "bart_tiny": bart_tiny})


def randomise_weights(model, inputs):
    """Makes random weights behave like trained ones where it matters for a numerical check.

    Batch-norm statistics are measured on a random batch (train mode, cumulative average): each
    BN then normalises what it really sees, as after training. With init-time statistics (mean 0,
    var 1) some nets (inception_v3: conv weights of std 0.1) grow activations layer by layer to
    ~1e12, where float32 reassociation alone exceeds rtol 1e-3, for ONNX Runtime as for kiln.
    The BN affine parameters are randomised first, so that folding them into convs is exercised.
    All-zero linear weights are re-drawn: torchvision zero-initialises some classifier heads
    (vit_b_16), which would make the output constant and the check vacuous.
    """
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:
        for m in bns:  # affine first: the statistics below must see the final upstream layers
            if m.weight is not None:
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.2, 0.2)
            m.reset_running_stats()
            m.momentum = None  # cumulative average over the calibration pass
        model.train()
        model(torch.randn(8, *inputs[0].shape[1:]))
        model.eval()
    for m in model.modules():
        if isinstance(m, torch.nn.Linear) and not m.weight.any():
            m.weight.data.normal_(0, 0.02)


def write_pb(array, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array)).SerializeToString())


def export(name, out_dir, dynamo=False):
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model.eval()
    with torch.no_grad():
        randomise_weights(model, inputs)
        # The reference is computed in float64, then rounded: a float32 reference carries its own
        # rounding error, which on deep nets (inception_v3) is already ~0.9 of kiln check's atol.
        ref = copy.deepcopy(model).double()
        expected = ref(*[x.double() if x.is_floating_point() else x for x in inputs]).float()
    case = os.path.join(out_dir, name + ("_dynamo" if dynamo else ""))
    data = os.path.join(case, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    names = [f"input_{i}" for i in range(len(inputs))]
    torch.onnx.export(model, tuple(inputs), os.path.join(case, "model.onnx"), opset_version=17,
                      input_names=names, output_names=["output"], dynamo=dynamo)
    for i, x in enumerate(inputs):
        write_pb(x.numpy(), os.path.join(data, f"input_{i}.pb"))
    write_pb(expected.numpy(), os.path.join(data, "output_0.pb"))
    print(f"{name}: {case} output {tuple(expected.shape)}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="where the case folders go (not the repository)")
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated; known: " + ", ".join(MODELS))
    p.add_argument("--dynamo", action="store_true",
                   help="use the torch.export-based exporter (the default of torch.onnx.export in torch 2.15), into OUT/NAME_dynamo")
    a = p.parse_args()
    failed = []
    for name in a.models.split(","):
        try:
            export(name, a.out, a.dynamo)
        except Exception as e:  # one model failing to export must not hide the others
            print(f"{name}: export failed: {e}", file=sys.stderr)
            failed.append(name)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
