import assert from "node:assert/strict";
import { multiprocessorCount } from "./multiprocessors.ts";

Deno.test("multiprocessorCount knows server GPUs by their adapter names", () => {
  assert.equal(multiprocessorCount("4318 9008 NVIDIA H100 80GB HBM3"), 132);
  assert.equal(multiprocessorCount("4318 NVIDIA H100 PCIe"), 114);
  assert.equal(multiprocessorCount("4318 NVIDIA H200"), 132);
  assert.equal(multiprocessorCount("NVIDIA A100-SXM4-80GB"), 108);
  assert.equal(multiprocessorCount("NVIDIA L40S"), 142);
  assert.equal(multiprocessorCount("NVIDIA L4"), 58);
  assert.equal(multiprocessorCount("NVIDIA H800 PCIe"), 114);
  assert.equal(multiprocessorCount("NVIDIA A10G"), 80);
  assert.equal(multiprocessorCount("NVIDIA A10"), 72);
});

Deno.test("multiprocessorCount gives null for adapters it does not know", () => {
  assert.equal(multiprocessorCount("llvmpipe (LLVM 19.1.7, 256 bits)"), null);
  assert.equal(multiprocessorCount("Google SwiftShader"), null);
  assert.equal(multiprocessorCount("unknown adapter"), null);
});
