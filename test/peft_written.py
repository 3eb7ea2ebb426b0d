#!/usr/bin/env python3
"""LoRA adapters written and read by `peft` itself, both directions.

    python3 test/peft_written.py OUT            # a machine with torch + transformers + peft
    deno run -A test/peft_written.ts OUT        # here: loads OUT/adapter, compares, writes OUT/ours
    python3 test/peft_written.py --check OUT    # peft loads OUT/ours and compares with our numbers

The first step saves a tiny random Qwen2 (OUT/base, save_pretrained), a LoRA adapter on it with
random A and B (OUT/adapter, PeftModel.save_pretrained) and OUT/expected.json: peft's next-token
log-probs of fixed ids (f32, eager attention).
"""

import json
import os
import sys

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoModelForCausalLM, Qwen2Config

IDS = [5, 17, 33, 40, 2, 61, 70, 12, 9, 44, 3, 80]


def logprobs(model):
    ids = torch.tensor([IDS])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    lp = torch.log_softmax(logits, dim=-1)
    return [lp[t, IDS[t + 1]].item() for t in range(len(IDS) - 1)]


def write(out):
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        tie_word_embeddings=True, attn_implementation="eager",
    )
    base = AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    base.save_pretrained(os.path.join(out, "base"))
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                      init_lora_weights=False, task_type="CAUSAL_LM")
    model = get_peft_model(base, lora)
    model.eval()
    model.save_pretrained(os.path.join(out, "adapter"))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"ids": IDS, "next_token_logprobs": logprobs(model)}, f)


def check(out):
    base = AutoModelForCausalLM.from_pretrained(os.path.join(out, "base"),
                                                attn_implementation="eager")
    model = PeftModel.from_pretrained(base, os.path.join(out, "ours"))
    model.eval()
    want = json.load(open(os.path.join(out, "ours_expected.json")))["next_token_logprobs"]
    got = logprobs(model)
    err = max(abs(a - b) for a, b in zip(got, want))
    print(f"peft loads our adapter: max |log-prob - ours| {err:.2e}")
    sys.exit(0 if err < 2e-4 else 1)


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        write(sys.argv[1])
