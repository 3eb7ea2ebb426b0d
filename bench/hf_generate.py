# Hugging Face `generate` (PyTorch eager) on the Qwen2.5 shapes with random weights, for the
# generation table beside bench/generate_device.ts: one JSON line per (dtype, batch).
#   python3 bench/hf_generate.py --config 0.5b --batch 1,64,256 --prompt 128 --new 256 --dtype fp32
import argparse, json, time
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

SHAPES = {  # hidden, intermediate, layers, heads, kv heads (Qwen2.5 config.json values)
    "0.5b": (896, 4864, 24, 14, 2),
    "1.5b": (1536, 8960, 28, 12, 2),
}
ap = argparse.ArgumentParser()
ap.add_argument("--config", default="0.5b", choices=sorted(SHAPES))
ap.add_argument("--batch", default="64")
ap.add_argument("--prompt", type=int, default=128)
ap.add_argument("--new", type=int, default=256)
ap.add_argument("--dtype", default="fp32")
args = ap.parse_args()
h, inter, layers, heads, kv = SHAPES[args.config]
cfg = Qwen2Config(hidden_size=h, intermediate_size=inter, num_hidden_layers=layers,
                  num_attention_heads=heads, num_key_value_heads=kv, vocab_size=151936,
                  max_position_embeddings=4096, rope_theta=1e6, tie_word_embeddings=True,
                  rms_norm_eps=1e-6)
torch.manual_seed(0)
for name in args.dtype.split(","):
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[name]
    m = Qwen2ForCausalLM(cfg).to("cuda", dtype).eval()
    for B in [int(b) for b in args.batch.split(",")]:
        ids = torch.randint(0, 150000, (B, args.prompt), device="cuda")
        kw = dict(attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0, top_k=50,
                  top_p=0.9, pad_token_id=0)
        with torch.no_grad():
            m.generate(ids, max_new_tokens=8, min_new_tokens=8, **kw)  # warm-up
            torch.cuda.synchronize()
            t = time.time()
            m.generate(ids, max_new_tokens=args.new, min_new_tokens=args.new, **kw)
            torch.cuda.synchronize()
            dt = time.time() - t
        print(json.dumps({"fig": "hf_generate", "config": args.config, "dtype": name, "batch": B,
                          "prompt": args.prompt, "new": args.new, "s": round(dt, 3),
                          "ms_per_token_step": round(dt * 1000 / args.new, 2),
                          "tok_per_s": round(B * args.new / dt, 1)}), flush=True)
    del m
    torch.cuda.empty_cache()
