"""PyTorch (cuBLAS) matmul throughput for comparison with bench/matmul_device.ts.

Prints one JSON line per measurement: fp32 with TF32 disabled (true fp32, like our kernel) and
fp16 (tensor cores) at the same square sizes, and the linear layer's other layouts at 4096, timed
with CUDA events over several products.

    python3 bench/torch_matmul.py [--sizes 2048,4096,8192] [--reps 10]

--decode 64,128,256 instead times x [M, K] @ W^T at the Qwen2.5-0.5B decode step's products (q/k/v
together, o, gate and up together, down, the LM head) for those row counts, fp32 (TF32 off) and
bf16, with the weights cycling through eight layers as a decode step reads them (more than the L2
cache holds): the counterparts of skinny_sweep.ts and swiglu_probe.ts.
"""

import argparse
import json

import torch


def median_ms(run, reps: int) -> float:
    """Milliseconds per product: the median of five timed calls of `run` (`reps` products each)."""
    times = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / reps)
    return sorted(times)[len(times) // 2]


def measure(n: int, dtype: torch.dtype, reps: int, layout: str = "") -> dict:
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    ops = {"": lambda: a @ b, "wT": lambda: a @ b.t(), "tA": lambda: a.t() @ b}
    op = ops[layout]
    for _ in range(3):
        op()
    torch.cuda.synchronize()

    def run() -> None:
        for _ in range(reps):
            op()

    ms = median_ms(run, reps)
    return {
        "name": f"torch_matmul_{str(dtype).removeprefix('torch.')}"
        + (f"_{layout}" if layout else ""),
        "n": n,
        "ms": round(ms, 4),
        "tflops": round(2 * n**3 / (ms * 1e9), 3),
        "device": torch.cuda.get_device_name(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


# (name, N, K): the 0.5B decode step's products, x [M, K] @ W [N, K]^T.
DECODE_PRODUCTS = [
    ("qkv", 1152, 896),
    ("o", 896, 896),
    ("gate_up", 2 * 4864, 896),
    ("down", 896, 4864),
    ("lm_head", 151936, 896),
]


def measure_decode(m: int, name: str, n: int, k: int, dtype: torch.dtype) -> dict:
    layers = 1 if name == "lm_head" else 8
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    ws = [torch.randn(n, k, device="cuda", dtype=dtype) for _ in range(layers)]
    reps = 32 * layers

    def run() -> None:
        for i in range(reps):
            x @ ws[i % layers].t()

    # About a second of the same work first: a GPU left mostly idle lowers its clock.
    warm_end = torch.cuda.Event(enable_timing=True)
    warm_start = torch.cuda.Event(enable_timing=True)
    warm_start.record()
    while True:
        run()
        warm_end.record()
        torch.cuda.synchronize()
        if warm_start.elapsed_time(warm_end) > 1000:
            break
    ms = median_ms(run, reps)
    return {
        "name": f"torch_decode_{str(dtype).removeprefix('torch.')}",
        "product": name,
        "m": m,
        "n": n,
        "k": k,
        "us": round(ms * 1000, 2),
        "tflops": round(2 * m * n * k / (ms * 1e9), 2),
        "device": torch.cuda.get_device_name(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2048,4096,8192")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--decode", default="")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if args.decode:
        for m in [int(s) for s in args.decode.split(",")]:
            for name, n, k in DECODE_PRODUCTS:
                for dtype in (torch.float32, torch.bfloat16):
                    print(json.dumps(measure_decode(m, name, n, k, dtype)), flush=True)
        return
    for n in [int(s) for s in args.sizes.split(",")]:
        reps = max(1, round(args.reps * (4096 / n) ** 3))
        print(json.dumps(measure(n, torch.float32, reps)), flush=True)
        print(json.dumps(measure(n, torch.float16, reps)), flush=True)
    # The linear layer's other layouts in fp32 (x @ W^T forward, g^T @ x weight gradient), the
    # counterparts of matmul_device.ts's matmul_f32_wT / _tA, and x @ W^T in fp16.
    print(json.dumps(measure(4096, torch.float32, args.reps, "wT")), flush=True)
    print(json.dumps(measure(4096, torch.float32, args.reps, "tA")), flush=True)
    print(json.dumps(measure(4096, torch.float16, args.reps, "wT")), flush=True)


if __name__ == "__main__":
    main()
