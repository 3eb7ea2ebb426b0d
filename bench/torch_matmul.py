"""PyTorch (cuBLAS) matmul throughput for comparison with bench/matmul_device.ts.

Prints one JSON line per measurement: fp32 with TF32 disabled (true fp32, like our kernel) and
fp16 (tensor cores) at the same square sizes, and the linear layer's other layouts at 4096, timed
with CUDA events over several products.

    python3 bench/torch_matmul.py [--sizes 2048,4096,8192] [--reps 10]
"""

import argparse
import json

import torch


def measure(n: int, dtype: torch.dtype, reps: int, layout: str = "") -> dict:
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    ops = {"": lambda: a @ b, "wT": lambda: a @ b.t(), "tA": lambda: a.t() @ b}
    op = ops[layout]
    for _ in range(3):
        op()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            op()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / reps)
    ms = sorted(times)[len(times) // 2]
    return {
        "name": f"torch_matmul_{str(dtype).removeprefix('torch.')}"
        + (f"_{layout}" if layout else ""),
        "n": n,
        "ms": round(ms, 4),
        "tflops": round(2 * n**3 / (ms * 1e9), 3),
        "device": torch.cuda.get_device_name(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2048,4096,8192")
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
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
