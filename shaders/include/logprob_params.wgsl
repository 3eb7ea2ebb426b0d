// The uniform block of the log-prob kernels (logprob, logprob_unfused): both TS ops pack
// [rows, vocab, temperature, 0] (src/tensor/ops/logprob.ts, logprob_unfused.ts).

struct Params {
  rows: u32,
  vocab: u32,
  temperature: f32,
  _p0: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
