#!/usr/bin/env python3
"""One PPO update of our trainer against plain PyTorch + transformers.

test/update_parity.ts writes a random Qwen2 model (OUT/actor) and critic (OUT/critic, the trunk
with a `score` head as AutoModelForTokenClassification with num_labels=1 loads it), a fixed batch
and, for each case, what one update of our trainer did: OUT/<case>/grads.safetensors (the
gradients accumulated over the micro-batches, before clipping) and OUT/<case>/after.safetensors
(the weights after the step). This script loads the folders with transformers (f32, eager
attention, SDPA under fp16; eval mode: no dropout), implements verl's losses (core_algos: agg_loss,
compute_policy_loss_vanilla, compute_policy_loss_gspo, compute_value_loss) in plain PyTorch,
runs the same micro-batch accumulation (losses aggregated against the mini-batch's token and
sequence counts, verl's global_batch_info), clip_grad_norm_ and torch.optim.AdamW, and prints
one JSON line per (case, quantity):

  log_prob / value     max |ours - torch| of the response log-probs (values) before the update
  grad                 per parameter: max |g_ours - g_torch| / max |g_torch|; the worst is checked
  grad_norm            the global norm before clipping, relative difference
  adamw_on_our_grads   torch's clip + AdamW applied to OUR gradients vs our weights after the step
  weights_after        our weights after the step vs torch's, against the difference the two
                       gradients explain (below)

Tolerances (f32 on both sides; products and sums are accumulated in other orders, so results
agree to rounding, not bit for bit):
  - log-probs and values: 1e-4 absolute, as test/transformers_parity.py.
  - gradients: 1e-4 of the parameter's largest gradient. Rounding of f32 sums over a few thousand
    terms is ~1e-6 relative (measured 1.8e-6 at the small shape against a plain torch Qwen2 on a
    CPU); 1e-4 leaves room for the 151,936-way softmax of the big shape, while one token taking
    the other clip branch, a missed mask or a wrong aggregation weight gives errors of 1e-2..1.
  - grad_cosine: every parameter's gradient points as torch's: cosine >= 1 - 1e-6 (f32), 0.999 (f16),
    over parameters whose gradient is above 1e-6 of the model's largest (below, rounding decides).
  - grad_norm: 1e-5 relative (our trainer's norm, computed on the GPU, vs torch's gradients' in f64).
  - adamw_on_our_grads: 1e-6 absolute (the same inputs: the update rule alone).
  - weights_after: AdamW's first step moves a weight by lr * g / (|g| + eps) (plus weight decay),
    ~lr * sign(g): a gradient element within rounding of 0 may step either way in either
    implementation. So each weight must agree within lr * |u(g_ours) - u(g_torch)| + 1e-6, with
    u(g) = g / (|g| + eps) of the clipped gradients: the weights differ by no more than the
    gradients' (checked) difference explains.

Mixed precision (written with --precision=fp16; the manifest says so): the torch side runs its
forward passes under torch.autocast(float16) and its backward on the loss times the loss scale our
update used (GradScaler's 2^16 at the first step), then divides the gradients by it, as our dump
does. Its attention is transformers' "sdpa" there (verl trains with flash attention): under
autocast that is fp16 SDPA (f32 scores and softmax statistics, P rounded to f16 before P V, f32
accumulation), which our fp16 attention follows; eager attention would round the scores
themselves to f16. Autocast also rounds the LM head's logits to f16 where we keep f32, and the two
sides accumulate in other orders and round P at other scales (flash attention rounds exp(S - max)
before dividing by the row sum), so they agree to f16 rounding, not f32's: log-probs and values 2e-2 absolute (logits near 10 are spaced
~8e-3 in f16), gradients 5e-2 of the model's largest gradient (a bias gradient is a sum over
positions that mostly cancels, so its own largest entry is no scale for f16 error), grad norm 1e-2
relative, and each parameter's gradient cosine 0.999 or more (measured 0.999997 at the tiny
shape). AdamW on our own gradients and the explained-weights check keep their f32 tolerances.
Each side's old log-probs keep the batch's designed log-ratio to its own log-probs (f16 rounding
moves log-probs by ~1e-3, more than GSPO's clip range of 3e-4).

How to run (a machine with torch and transformers; CUDA if available, else CPU):

    deno run -A test/update_parity.ts --out=OUT [--shape=0.5b-2layers] [--precision=fp16]
    python3 test/update_parity.py OUT [--device cpu]

Exit status: 0 all pass, 1 a check failed, 2 a setup error.
"""

import argparse
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformers_parity import import_torch, load_model  # noqa: E402

LOGPROB_ATOL = 1e-4
GRAD_RTOL = 1e-4
GRAD_NORM_RTOL = 1e-5
GRAD_COS = 1 - 1e-6
WEIGHT_ATOL = 1e-6
# Mixed precision (the docstring says why).
F16_LOGPROB_ATOL = 2e-2
F16_GRAD_RTOL = 5e-2
F16_GRAD_NORM_RTOL = 1e-2
F16_GRAD_COS = 0.999


def read_safetensors(path, torch):
    """name -> tensor of an F32 / I32 safetensors file (no dependency beyond torch)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    dtypes = {"F32": torch.float32, "I32": torch.int32}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        start, end = e["data_offsets"]
        raw = bytearray(data[8 + n + start:8 + n + end])
        t = torch.frombuffer(raw, dtype=dtypes[e["dtype"]]) if raw else torch.zeros(0)
        out[name] = t.reshape(e["shape"])
    return out


def agg_loss(loss_mat, mask, mode, batch_num_tokens, global_batch_size):
    """verl's agg_loss with the mini-batch's counts (dp_size 1)."""
    if mode == "token-mean":
        return (loss_mat * mask).sum() / batch_num_tokens
    if mode == "seq-mean-token-mean":
        count = mask.sum(-1)
        seq = (loss_mat * mask).sum(-1) / (count + 1e-8)
        return (seq * (count > 0).float()).sum() / global_batch_size
    raise ValueError(f"loss_agg_mode {mode} is not part of this check")


def policy_loss_vanilla(old, lp, adv, mask, cfg, info, torch):
    neg_kl = torch.clamp(lp - old, min=-20.0, max=20.0)
    ratio = torch.exp(neg_kl)
    l1 = -adv * ratio
    l2 = -adv * torch.clamp(ratio, 1 - cfg["clipRatioLow"], 1 + cfg["clipRatioHigh"])
    clip1 = torch.maximum(l1, l2)
    clip2 = torch.minimum(-adv * cfg["clipRatioC"], clip1)
    pg = torch.where(adv < 0, clip2, clip1)
    return agg_loss(pg, mask, cfg["lossAggMode"], **info)


def policy_loss_gspo(old, lp, adv, mask, cfg, info, torch):
    neg_kl = lp - old
    seq_len = mask.sum(-1).clamp(min=1)
    neg_kl_seq = (neg_kl * mask).sum(-1) / seq_len
    log_ratio = torch.clamp(lp - lp.detach() + neg_kl_seq.detach().unsqueeze(-1), max=10.0)
    ratio = torch.exp(log_ratio)
    l1 = -adv * ratio
    l2 = -adv * torch.clamp(ratio, 1 - cfg["clipRatioLow"], 1 + cfg["clipRatioHigh"])
    return agg_loss(torch.maximum(l1, l2), mask, "seq-mean-token-mean", **info)


def value_loss(vpreds, returns, values, mask, cfg, info, torch):
    c = cfg["cliprangeValue"]
    clipped = torch.maximum(torch.minimum(vpreds, values + c), values - c)
    l1 = (vpreds - returns) ** 2
    l2 = (clipped - returns) ** 2
    return 0.5 * agg_loss(torch.maximum(l1, l2), mask, cfg["lossAggMode"], **info)


def forward(model, batch, rows, m, value, torch):
    """Log-probs of the response tokens (or values at the positions predicting them), [n, R]."""
    P, R = m["batch"]["prompt_length"], m["batch"]["response_length"]
    half = m.get("precision") == "fp16"
    device = batch["input_ids"].device.type
    with torch.autocast(device_type=device, dtype=torch.float16, enabled=half):
        out = model(input_ids=batch["input_ids"][rows].long(),
                    attention_mask=batch["attention_mask"][rows].long(),
                    position_ids=batch["position_ids"][rows].long())
    x = out.logits[:, P - 1:P - 1 + R].float()
    if value:
        return x.squeeze(-1)
    lp = torch.log_softmax(x / m["update"]["temperature"], dim=-1)
    return lp.gather(-1, batch["responses"][rows].long().unsqueeze(-1)).squeeze(-1)


def clipped(grads, norm, clip):
    scale = min(1.0, clip / (norm + 1e-6))
    return {n: g * scale for n, g in grads.items()}


def adamw_step(params, grads, m, torch):
    """torch's clip_grad_norm_ + AdamW on `params` (name -> tensor) with these gradients."""
    ps = {n: torch.nn.Parameter(t.clone()) for n, t in params.items()}
    for n, p in ps.items():
        p.grad = grads[n].clone()
    u, o = m["update"], m["optim"]
    norm = torch.nn.utils.clip_grad_norm_(list(ps.values()), u["gradClip"]).item()
    opt = torch.optim.AdamW(list(ps.values()), lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"],
                            weight_decay=o["weight_decay"])
    opt.step()
    return {n: p.detach() for n, p in ps.items()}, norm


def run_case(root, name, model, batch, m, device, torch):
    """One update in torch; yields the JSON lines of the case."""
    value = name == "value"
    cfg = m["critic_case"] if value else m["actor_cases"][name]
    ours_g = {k: v.to(device) for k, v in read_safetensors(f"{root}/{name}/grads.safetensors", torch).items()}
    ours_w = {k: v.to(device) for k, v in read_safetensors(f"{root}/{name}/after.safetensors", torch).items()}
    params = dict(model.named_parameters())
    if sorted(params) != sorted(ours_g):
        raise RuntimeError(f"{name}: parameter names differ: torch {sorted(set(params) - set(ours_g))}, "
                           f"ours {sorted(set(ours_g) - set(params))}")
    before = {n: p.detach().clone() for n, p in params.items()}
    mask = batch["response_mask"].float()
    B, micro = m["batch"]["rows"], m["update"]["microBatchSize"]
    info = {"batch_num_tokens": mask.sum().item(), "global_batch_size": B}
    want = batch["vpreds" if value else "log_probs"]
    model.zero_grad(set_to_none=True)
    half = m.get("precision") == "fp16"
    loss_scale = m["metrics"][name].get("loss_scale", 1.0) if half else 1.0
    tol_lp = F16_LOGPROB_ATOL if half else LOGPROB_ATOL
    tol_g = F16_GRAD_RTOL if half else GRAD_RTOL
    tol_norm = F16_GRAD_NORM_RTOL if half else GRAD_NORM_RTOL
    first_err = 0.0
    for start in range(0, B, micro):
        rows = torch.arange(start, min(B, start + micro), device=device)
        y = forward(model, batch, rows, m, value, torch)
        first_err = max(first_err, ((y.detach() - want[rows]).abs() * mask[rows]).max().item())
        if value:
            loss = value_loss(y, batch["returns"][rows], batch["values"][rows], mask[rows], cfg, info, torch)
        else:
            fn = policy_loss_gspo if cfg["policyLoss"] == "gspo" else policy_loss_vanilla
            old = batch[f"{name}.old_log_probs"][rows]
            if half:
                # The batch places each token's log-ratio (old vs our log-probs) away from the clip
                # bounds; f16 rounding moves torch's log-probs by ~1e-3, more than GSPO's 3e-4
                # clip range, so torch's old log-probs keep the same log-ratio to its own.
                old = old + (y.detach() - want[rows])
            loss = fn(old, y, batch["advantages"][rows], mask[rows], cfg, info, torch)
        (loss * loss_scale).backward()
    yield {"quantity": "value" if value else "log_prob", "max_abs_diff": first_err, "tol": tol_lp,
           "pass": first_err <= tol_lp}

    torch_g = {n: (p.grad / loss_scale if p.grad is not None else torch.zeros_like(p)).detach()
               for n, p in params.items()}
    largest = max(g.abs().max().item() for g in torch_g.values())
    per_param = {}
    for n in params:
        scale = largest if half else torch_g[n].abs().max().item()
        diff = (ours_g[n] - torch_g[n]).abs().max().item()
        per_param[n] = diff / scale if scale > 0 else diff
    worst = max(per_param, key=per_param.get)
    yield {"quantity": "grad", "max_rel_err": per_param[worst], "worst": worst, "tol": tol_g,
           "pass": per_param[worst] <= tol_g, "per_param": per_param}
    # Direction per parameter, whatever its scale: in f16 the error is measured against the
    # model's largest gradient, which alone would let a parameter of small gradients be wrong.
    cos = {}
    for n in params:
        a, b = ours_g[n].double().flatten(), torch_g[n].double().flatten()
        na, nb = a.norm().item(), b.norm().item()
        if nb > 0 and nb >= 1e-6 * largest:  # gradients at rounding level have no direction
            cos[n] = (a @ b).item() / (na * nb) if na > 0 else 0.0
    tol_cos = F16_GRAD_COS if half else GRAD_COS
    low = min(cos, key=cos.get)
    yield {"quantity": "grad_cosine", "min": cos[low], "worst": low, "tol": tol_cos,
           "pass": cos[low] >= tol_cos}

    torch_w, torch_norm = adamw_step(before, torch_g, m, torch)
    ours_w_from_ours, _ = adamw_step(before, ours_g, m, torch)
    # Our norm as our trainer computed it (and clipped with); torch's gradients' norm in f64 (an
    # f32 torch.norm over 10^8 elements on a CPU is itself off by ~5e-5).
    metrics = m["metrics"][name]
    our_norm = metrics.get("actor/grad_norm", metrics.get("critic/grad_norm"))
    norm64 = sum((g.double() ** 2).sum() for g in torch_g.values()).sqrt().item()
    rel = abs(our_norm - norm64) / norm64
    yield {"quantity": "grad_norm", "ours": our_norm, "torch": norm64, "rel_err": rel,
           "tol": tol_norm, "pass": rel <= tol_norm}

    diff = max((ours_w[n] - ours_w_from_ours[n]).abs().max().item() for n in params)
    yield {"quantity": "adamw_on_our_grads", "max_abs_diff": diff, "tol": WEIGHT_ATOL, "pass": diff <= WEIGHT_ATOL}

    lr, eps, clip = m["optim"]["lr"], m["optim"]["eps"], m["update"]["gradClip"]
    go, gt = clipped(ours_g, our_norm, clip), clipped(torch_g, torch_norm, clip)
    worst_abs, worst_over, moved = 0.0, 0.0, 0.0
    for n in params:
        d = (ours_w[n] - torch_w[n]).abs()
        explained = lr * (go[n] / (go[n].abs() + eps) - gt[n] / (gt[n].abs() + eps)).abs()
        worst_abs = max(worst_abs, d.max().item())
        worst_over = max(worst_over, (d - explained).max().item())
        moved = max(moved, (ours_w[n] - before[n]).abs().max().item())
    yield {"quantity": "weights_after", "max_abs_diff": worst_abs, "max_beyond_explained": worst_over,
           "tol": WEIGHT_ATOL, "max_step": moved, "pass": worst_over <= WEIGHT_ATOL and moved > lr / 2}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", help="the folder test/update_parity.ts wrote")
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available, else cpu)")
    args = parser.parse_args()
    imported = import_torch()
    if imported is None:
        return 2
    torch, transformers = imported
    from transformers import AutoModelForTokenClassification
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    root = args.root
    with open(os.path.join(root, "manifest.json"), encoding="utf-8") as f:
        m = json.load(f)
    batch = {k: v.to(device) for k, v in read_safetensors(f"{root}/batch.safetensors", torch).items()}
    mask = batch["attention_mask"].long()
    if not torch.equal((mask.cumsum(-1) - 1).clamp(min=0), batch["position_ids"].long()):
        print("position_ids are not verl's clamp(cumsum(attention_mask) - 1, 0)", file=sys.stderr)
        return 2
    # fp16: autocast's SDPA, the attention our fp16 mode follows (the docstring says why).
    attn = "sdpa" if m.get("precision") == "fp16" else "eager"
    print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                      "device": device, "shape": m["shape"], "precision": m.get("precision", "fp32"),
                      "attention": attn}))
    arch = m["architecture"]
    failed = 0
    for name in [*m["actor_cases"], "value"]:
        if name == "value":
            model = load_model(f"{root}/critic", arch.replace("ForCausalLM", "ForTokenClassification"),
                               device, torch, transformers, AutoModelForTokenClassification, num_labels=1,
                               attn_implementation=attn)
        else:
            model = load_model(f"{root}/actor", arch, device, torch, transformers, attn_implementation=attn)
        for line in run_case(root, name, model, batch, m, device, torch):
            print(json.dumps({"case": name, **line}), flush=True)
            failed += 0 if line["pass"] else 1
        del model
    print(json.dumps({"failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
