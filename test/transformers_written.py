#!/usr/bin/env python3
"""Model folders written by transformers itself, for our loader to read back.

For each supported family and RoPE variant this saves a tiny random model with
`save_pretrained` (safetensors; one copy in bfloat16), a small fast tokenizer beside it, and
`expected.json`: transformers' next-token log-probs of fixed token ids (f32, eager attention) and
its greedy continuation. `test/transformers_written.ts` then loads every folder with our code and
compares.

    python3 test/transformers_written.py OUT_DIR          # a machine with torch + transformers
    deno run -A test/transformers_written.ts OUT_DIR      # here
"""

import json
import os
import sys

import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import (
    AutoModelForCausalLM,
    LlamaConfig,
    MistralConfig,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen3Config,
)

VOCAB = 96  # printable ASCII after 3 specials
COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    bos_token_id=None,
    eos_token_id=1,
    pad_token_id=0,
)


def rope(kind, **kw):
    """The same rope settings in the argument transformers of this version takes."""
    major = int(transformers.__version__.split(".")[0])
    return {"rope_parameters": {"rope_type": kind, **kw}} if major >= 5 else {
        "rope_theta": kw.pop("rope_theta"), "rope_scaling": {"rope_type": kind, **kw}}


CASES = {
    "qwen2_tied": lambda: Qwen2Config(**COMMON, tie_word_embeddings=True),
    "qwen3_head_dim": lambda: Qwen3Config(**COMMON, head_dim=32, tie_word_embeddings=False),
    "llama3.1_scaled": lambda: LlamaConfig(**COMMON, **rope(
        "llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=64)),
    "llama_linear": lambda: LlamaConfig(**COMMON, **rope("linear", rope_theta=10000.0, factor=2.0)),
    "qwen2_yarn": lambda: Qwen2Config(**COMMON, **rope(
        "yarn", rope_theta=10000.0, factor=4.0, original_max_position_embeddings=64)),
    "mistral": lambda: MistralConfig(**COMMON, sliding_window=None),
    "llama_bf16": lambda: LlamaConfig(**COMMON),
}


def tokenizer():
    specials = ["<pad>", "<eos>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for c in range(32, 32 + VOCAB - len(specials)):
        vocab[chr(c)] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(pattern=Regex("[\\s\\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    ids = torch.tensor([[5, 17, 42, 9, 63, 28, 71, 3, 88, 14, 50, 33, 7, 90, 21, 60] * 5])  # T = 80
    expected = {"transformers": transformers.__version__, "ids": ids[0].tolist(), "folders": {}}
    for name, make in CASES.items():
        cfg = make()
        cfg._attn_implementation = "eager"
        model = AutoModelForCausalLM.from_config(cfg).eval()
        with torch.no_grad():
            for p in model.parameters():  # visible values, not the near-zero default init
                p.normal_(0.0, 0.08)
        if name.endswith("bf16"):
            model = model.to(torch.bfloat16)
        folder = f"{out}/{name}"
        model.save_pretrained(folder)
        tokenizer().save_pretrained(folder)
        with torch.no_grad():
            logits = model.float()(ids).logits[0]  # [T, V], the saved (rounded) weights in f32
        logp = torch.log_softmax(logits.double(), -1)
        next_lp = logp[:-1].gather(-1, ids[0, 1:, None])[:, 0]
        expected["folders"][name] = {
            "class": type(model).__name__,
            "next_token_logprobs": next_lp.tolist(),
            "argmax": logits.argmax(-1).tolist(),
        }
        print(f"{name:18s} {type(model).__name__:22s} saved", flush=True)
    with open(f"{out}/expected.json", "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
