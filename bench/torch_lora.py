"""PyTorch + PEFT on the same GPU: one update of full fine-tuning against LoRA, per model shape.

transformers' Qwen2 with random weights at the Qwen2.5 shapes, a PPO-clip loss on every position,
micro-batches accumulated into one AdamW step, as bench/lora_device.ts's update_actor does (64
sequences of 128 + 256 tokens, 8 per micro-batch). For each dtype, full fine-tuning trains every
weight; LoRA (peft, r and alpha as given, all-linear, no dropout) trains the adapters only, on a
frozen base of that dtype. Prints one JSON line per (shape, dtype, mode) and the LoRA / full ratio
of update tokens/s.

  python3 bench/torch_lora.py [--shapes 0.5b,1.5b] [--dtypes fp32,bf16] [--rank 32] [--steps 2]
"""
import argparse, json, time
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

SHAPES = {  # hidden, intermediate, layers, heads, kv heads (the Qwen2.5 configs)
    "0.5b": (896, 4864, 24, 14, 2),
    "1.5b": (1536, 8960, 28, 12, 2),
}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def model_for(shape: str, dtype: torch.dtype) -> Qwen2ForCausalLM:
    h, i, layers, heads, kv = SHAPES[shape]
    cfg = Qwen2Config(hidden_size=h, intermediate_size=i, num_hidden_layers=layers,
                      num_attention_heads=heads, num_key_value_heads=kv, vocab_size=151936,
                      max_position_embeddings=4096, rope_theta=1e6, tie_word_embeddings=True,
                      rms_norm_eps=1e-6)
    torch.manual_seed(0)
    return Qwen2ForCausalLM(cfg).to("cuda", dtype)


def update_seconds(m, params, args) -> float:
    opt = torch.optim.AdamW(params, lr=1e-6)
    micro = args.micro
    batches = args.sequences // micro
    seq = args.prompt + args.response
    x = torch.randint(0, 150000, (args.sequences, seq), device="cuda")
    adv = torch.randn(args.sequences, seq - 1, device="cuda")

    def step():
        for b in range(batches):
            xb, ab = x[b * micro:(b + 1) * micro], adv[b * micro:(b + 1) * micro]
            logits = m(xb).logits[:, :-1].float()
            lp = torch.log_softmax(logits, -1).gather(-1, xb[:, 1:, None]).squeeze(-1)
            ratio = torch.exp(lp - lp.detach())
            loss = torch.max(-ab * ratio, -ab * ratio.clamp(0.8, 1.2)).mean() / batches
            loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    torch.cuda.synchronize()
    t = time.time()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    return (time.time() - t) / args.steps


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="0.5b,1.5b")
    p.add_argument("--dtypes", default="fp32,bf16")
    p.add_argument("--rank", type=int, default=32)
    p.add_argument("--alpha", type=int, default=64)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--sequences", type=int, default=64)
    p.add_argument("--micro", type=int, default=8)
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--response", type=int, default=256)
    args = p.parse_args()
    tokens = args.sequences * (args.prompt + args.response)
    for shape in args.shapes.split(","):
        for dname in args.dtypes.split(","):
            rates = {}
            for mode in ["full", f"lora_r{args.rank}"]:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                m = model_for(shape, DTYPES[dname])
                if mode == "full":
                    params = list(m.parameters())
                else:
                    from peft import LoraConfig, get_peft_model
                    cfg = LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.0,
                                     target_modules="all-linear")
                    m = get_peft_model(m, cfg)
                    params = [q for q in m.parameters() if q.requires_grad]
                m.train()
                s = update_seconds(m, params, args)
                rates[mode] = tokens / s
                print(json.dumps({
                    "fig": "torch_update", "shape": shape, "dtype": dname, "mode": mode,
                    "s": round(s, 3), "tok_per_s": round(tokens / s),
                    "trainable": sum(q.numel() for q in params),
                    "peak_gb": round(torch.cuda.max_memory_allocated() / 1e9, 2),
                }), flush=True)
                del m, params
            lora = rates[f"lora_r{args.rank}"]
            print(json.dumps({"fig": "torch_lora_ratio", "shape": shape, "dtype": dname,
                              "lora_over_full": round(lora / rates["full"], 3)}), flush=True)


if __name__ == "__main__":
    main()
