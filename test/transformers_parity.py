#!/usr/bin/env python3
"""Round trip of our model folders through Hugging Face transformers.

The Deno side writes one model folder per supported family and RoPE variant (tiny seeded
weights, our safetensors/config.json writer, the character tokenizer, generation_config.json)
and records what our trainer computes in expected.json. This script loads every folder with
AutoTokenizer and AutoModelForCausalLM and checks, folder by folder:

  - tokens:   the same token ids for a few strings ("#### 6", runs of spaces, newlines,
              characters outside the alphabet), with add_special_tokens=False
  - template: apply_chat_template renders the same prompt text
  - class:    transformers builds the class config.json names (Qwen2ForCausalLM, ...)
  - logprob:  next-token log-probs of fixed token ids within 1e-4 of ours (f32, eager attention)
  - greedy:   transformers' argmax after each of our greedy tokens is our next token (a step
              where the two candidates' logits are within 1e-4 counts as a tie, not a mismatch)

It prints a table and exits 1 on any mismatch, 2 on a setup error, 0 otherwise. Folders spelled
as transformers 5 writes them (rope_parameters, dtype) are skipped under transformers 4.x, which
does not read that spelling.

How to run (a machine with python3, torch and transformers; no GPU needed, --device cuda uses one):

    deno run -A test/transformers_parity.ts outputs/transformers_parity   # on our side
    PYTHONUNBUFFERED=1 python3 test/transformers_parity.py outputs/transformers_parity [--device cpu]

Copy the folder between machines if the two sides run on different ones.
"""

import argparse
import json
import math
import os
import sys

LOGPROB_ATOL = 1e-4
TIE_ATOL = 1e-4


def version_at_least(version, wanted):
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts) >= wanted


def import_torch():
    """torch and transformers with TF32 off (f32 parity needs exact f32 products), or None."""
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"needs torch and transformers: {e}", file=sys.stderr)
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, transformers


def load_model(path, architecture, device, torch, transformers, auto_class=None, **extra):
    """f32, eager attention, eval mode; `auto_class` (default AutoModelForCausalLM) and `extra`
    (e.g. num_labels=1, or attn_implementation="sdpa") choose another head or attention."""
    from transformers import AutoModelForCausalLM

    auto_class = auto_class or AutoModelForCausalLM
    kwargs = {"attn_implementation": "eager", **extra}
    # transformers 4.56 renamed torch_dtype to dtype.
    if version_at_least(transformers.__version__, (4, 56)):
        kwargs["dtype"] = torch.float32
    else:
        kwargs["torch_dtype"] = torch.float32
    model = auto_class.from_pretrained(path, **kwargs).to(device).eval()
    name = type(model).__name__
    if name != architecture:
        raise RuntimeError(f"transformers built {name}, config.json names {architecture}")
    return model


def score(model, ids, device, torch):
    """Next-token log-probs of one unpadded sequence."""
    with torch.no_grad():
        x = torch.tensor([ids], dtype=torch.long, device=device)
        logits = model(input_ids=x).logits[0].float()
        lp = torch.log_softmax(logits, dim=-1)
        return [lp[t, ids[t + 1]].item() for t in range(len(ids) - 1)]


def greedy_agrees(model, ids, ours, device, torch):
    """Teacher-forces our greedy tokens through the KV cache; returns (mismatches, ties)."""
    mismatches, ties = [], 0
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids], dtype=torch.long, device=device), use_cache=True)
        for step, token in enumerate(ours):
            logits = out.logits[0, -1].float()
            theirs = int(torch.argmax(logits).item())
            if theirs != token:
                gap = (logits[theirs] - logits[token]).item()
                if gap > TIE_ATOL:
                    mismatches.append(f"step {step}: ours {token}, theirs {theirs} (gap {gap:.2e})")
                else:
                    ties += 1
            nxt = torch.tensor([[token]], dtype=torch.long, device=device)
            out = model(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
    return mismatches, ties


def check_tokenizer(path, expected):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    problems = []
    for case in expected["strings"]:
        got = tok(case["text"], add_special_tokens=False)["input_ids"]
        if got != case["ids"]:
            problems.append(f"tokens of {case['text']!r}: ours {case['ids']}, theirs {got}")
    chat = expected["chat"]
    text = tok.apply_chat_template(chat["messages"], tokenize=False, add_generation_prompt=True)
    if text != chat["text"]:
        problems.append(f"template: ours {chat['text']!r}, theirs {text!r}")
    return type(tok).__name__, problems


def check_folder(root, entry, expected, device, torch, transformers):
    path = os.path.join(root, entry["folder"])
    row = {"name": entry["name"], "tokenizer": "-", "tokens": "-", "class": "-", "logprob": "-",
           "greedy": "-", "problems": [], "skipped": None}
    if entry["spelling"] == "5.x" and not version_at_least(transformers.__version__, (5, 0)):
        row["skipped"] = "written in the 5.x spelling"
        return row
    row["tokenizer"], problems = check_tokenizer(path, expected)
    row["tokens"] = "ok" if not problems else "MISMATCH"
    row["problems"] += problems
    worst, greedy_bad, greedy_ties = 0.0, [], 0
    for seq in entry["sequences"]:
        # A fresh model per sequence: transformers' dynamic NTK keeps state between forwards.
        model = load_model(path, entry["architecture"], device, torch, transformers)
        row["class"] = "ok"
        theirs = score(model, seq["ids"], device, torch)
        err = max(abs(a - b) for a, b in zip(seq["logprobs"], theirs))
        if not all(math.isfinite(v) for v in theirs):
            err = math.inf
        worst = max(worst, err)
        bad, ties = greedy_agrees(model, seq["ids"], seq["greedy"], device, torch)
        greedy_bad += [f"sequence of {len(seq['ids'])} tokens, {b}" for b in bad]
        greedy_ties += ties
        del model
    row["logprob"] = f"{worst:.2e}"
    if not worst <= LOGPROB_ATOL:
        row["problems"].append(f"log-prob max |ours - theirs| {worst:.3e} > {LOGPROB_ATOL}")
    row["greedy"] = ("ok" if not greedy_bad else "MISMATCH") + (f" ({greedy_ties} ties)" if greedy_ties else "")
    row["problems"] += greedy_bad
    return row


def print_table(rows):
    cols = ["name", "tokenizer", "tokens", "class", "logprob", "greedy"]
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    print("  ".join("-" * widths[c] for c in cols))
    for r in rows:
        line = "  ".join(str(r[c]).ljust(widths[c]) for c in cols)
        print(line + (f"  skipped: {r['skipped']}" if r["skipped"] else ""))
    for r in rows:
        for p in r["problems"]:
            print(f"{r['name']}: {p}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", help="the folder test/transformers_parity.ts wrote")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    args = parser.parse_args()
    imported = import_torch()
    if imported is None:
        return 2
    torch, transformers = imported
    with open(os.path.join(args.root, "expected.json"), encoding="utf-8") as f:
        expected = json.load(f)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, device {args.device}")
    rows = []
    for entry in expected["models"]:
        try:
            rows.append(check_folder(args.root, entry, expected, args.device, torch, transformers))
        except Exception as e:  # one broken folder must not hide the others
            rows.append({"name": entry["name"], "tokenizer": "-", "tokens": "-", "class": "ERROR",
                         "logprob": "-", "greedy": "-", "skipped": None,
                         "problems": [f"{type(e).__name__}: {e}"]})
    print_table(rows)
    failed = [r for r in rows if r["problems"]]
    checked = [r for r in rows if not r["skipped"]]
    print(f"{len(checked) - len(failed)} passed, {len(failed)} failed, {len(rows) - len(checked)} skipped")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
