/**
 * The kernel rule of the project, checked over every `shaders/*.wgsl` (include files excluded):
 * a TS op dispatches it, a plain-TS CPU reference says what it computes, and a test runs the op
 * against that reference. Also: every `#include` resolves, every include file is used, the
 * directives behave, and the browser bundle carries exactly the WGSL Deno loads.
 *
 * Where a reference may live: a shader dispatched from src/tensor/ has it under src/tensor/ref/;
 * a shader dispatched from another folder (src/algos, src/nn, src/rollout) has it in that same
 * src/ folder. COVERAGE names the three files per shader; the checks read them from disk.
 */
import assert from "node:assert/strict";
import {
  expandIncludes,
  includeFiles,
  includesOf,
  kernelKey,
  readShaderFile,
  registerShaderSources,
  shaderNames,
  shaderSource,
  specialize,
} from "../src/gpu/mod.ts";
import { shaderModule } from "../web/build.ts";
import { importsOf, projectFiles, resolve, type SourceFile, stripComments } from "./layers.ts";

interface Coverage {
  /** The module callers use; it dispatches the shader or imports the file that does. */
  op: string;
  /** The plain-TS CPU reference of what the shader computes. */
  ref: string;
  /** A test that runs the op and compares it with the reference. */
  test: string;
  /** Names the test reaches the op through, when it does not call the op's exports itself. */
  calls?: string[];
}

const T = "src/tensor/";
const tensorOp = (op: string, ref = op, test = `${op}_test`): Coverage => ({
  op: `${T}ops/${op}.ts`,
  ref: `${T}ref/${ref}.ts`,
  test: `${T}ops/${test}.ts`,
});
const attention = tensorOp("attention");
const attentionGemm = tensorOp("attention_gemm_kernels", "attention_gemm", "attention_gemm_test");
const basic: Coverage = { ...tensorOp("basic"), test: `${T}autograd_test.ts` };
const gradNorm = tensorOp("grad_norm");
const matmul = tensorOp("matmul");
const skinny = tensorOp("matmul_skinny", "matmul");
const kvCache: Coverage = {
  op: "src/nn/kv_cache.ts",
  ref: "src/nn/ref_model.ts",
  test: "src/nn/decoder_test.ts",
  calls: ["prefill", "decodeStep"], // CausalLM's cached passes append through KvCache
};
const sampling: Coverage = {
  op: "src/rollout/sampler.ts",
  ref: "src/rollout/ref_sampler.ts",
  test: "src/rollout/sampler_test.ts",
};
const ppo = (op: string, ref: string): Coverage => ({
  op: `src/algos/gpu/${op}.ts`,
  ref: `src/algos/${ref}.ts`,
  test: "src/algos/gpu/ppo_loss_test.ts",
});

/** Shader name -> its op, reference and test. */
export const COVERAGE: Record<string, Coverage> = {
  adamw: { ...tensorOp("adamw"), test: "src/nn/optim_test.ts", calls: ["AdamW"] },
  attention_bwd_dkv: attention,
  attention_bwd_dq: attention,
  attention_combine: attention,
  attention_decode: { ...attention, test: `${T}ops/attention_decode_test.ts` },
  attention_fwd: attention,
  attention_gemm_grad: attentionGemm,
  attention_gemm_pack: attentionGemm,
  attention_gemm_softmax: attentionGemm,
  axpy: basic,
  basic,
  cross_entropy: tensorOp("cross_entropy"),
  dropout: tensorOp("dropout"),
  elementwise: tensorOp("elementwise"),
  embedding: tensorOp("embedding"),
  gae: {
    op: "src/algos/gpu/gae.ts",
    ref: "src/algos/advantage.ts",
    test: "src/algos/gpu/gae_test.ts",
  },
  grad_norm: gradNorm,
  grad_norm_finish: gradNorm,
  kv_cache_last: kvCache,
  lm_head_logprob: tensorOp("lm_head_logprob"),
  logprob: tensorOp("logprob"),
  logprob_unfused: tensorOp("logprob_unfused", "logprob", "logprob_test"),
  matmul,
  matmul_bias: matmul,
  matmul_cat: tensorOp("matmul_cat", "matmul"),
  matmul_skinny: skinny,
  matmul_skinny_qkv: tensorOp("qkv_linear", "matmul"),
  qkv_split_sum: tensorOp("qkv_linear", "matmul"),
  matmul_skinny_swiglu: tensorOp("swiglu_linear", "swiglu"),
  matmul_swiglu: tensorOp("swiglu_woven", "swiglu"),
  swiglu_split_sum: tensorOp("swiglu_linear", "swiglu"),
  matmul_splitk: skinny,
  splitk_rmsnorm: tensorOp("linear_norm", "rmsnorm"),
  paged_rope_qk_cache: tensorOp("paged_rope_cache", "paged", "paged_attention_test"),
  ppo_loss: ppo("ppo_loss", "actor_loss"),
  ppo_loss_cov: {
    op: "src/algos/gpu/ppo_loss_cov.ts",
    ref: "src/algos/policy_losses/cov_select.ts",
    test: "src/algos/gpu/ppo_loss_cov_test.ts",
  },
  ppo_loss_finish: ppo("ppo_loss", "actor_loss"), // the aggregated loss computeActorLoss returns
  ppo_loss_value: ppo("ppo_loss_value", "value_loss"),
  reduce: tensorOp("reduce"),
  rmsnorm: tensorOp("rmsnorm"),
  rope: tensorOp("rope"),
  rope_qk: tensorOp("rope", "rope", "rope_qk_test"),
  rope_qk_cache: tensorOp("rope_cache", "rope", "rope_cache_test"),
  sampling,
  sampling_chunks: sampling,
  select_rows: tensorOp("select_rows"),
  softmax: tensorOp("softmax"),
  swiglu: tensorOp("swiglu"),
  unpack_halves: tensorOp("unpack_halves"),
};

const ROOT = new URL("../", import.meta.url).pathname;

/** Names a module exports: declarations and `export { a, b as c }` lists. */
function exportsOf(text: string): string[] {
  const code = stripComments(text);
  const names = [...code.matchAll(/export\s+(?:async\s+)?(?:function|const|let|class)\s+(\w+)/g)]
    .map((m) => m[1]);
  for (const m of code.matchAll(/export\s*(?:type\s*)?\{([^}]*)\}/g)) {
    for (const part of m[1].split(",")) {
      const name = part.trim().split(/\s+as\s+/).pop()?.replace(/^type\s+/, "");
      if (name) names.push(name);
    }
  }
  return names;
}

const mentions = (text: string, names: string[]) =>
  names.some((n) => new RegExp(`\\b${n}\\b`).test(stripComments(text)));

/** What is missing for `shader`, as messages naming it; empty when the rule holds. */
function coverageProblems(shader: string, files: Map<string, SourceFile>): string[] {
  const c = COVERAGE[shader];
  const say = (what: string) => `shader "${shader}": ${what}`;
  if (!c) return [say("no entry in COVERAGE (tools/shaders_test.ts): name its op, ref and test")];
  const out: string[] = [];
  const spec = new RegExp(`shader:\\s*"${shader}"`);
  const loaders = [...files.values()]
    .filter((f) => f.path.startsWith("src/") && !f.path.endsWith("_test.ts"))
    .filter((f) => f.path.endsWith(".ts") && spec.test(stripComments(f.text)))
    .map((f) => f.path);
  if (loaders.length === 0) {
    out.push(say(`no TS file under src/ dispatches it (shader: "${shader}")`));
  }
  const op = files.get(c.op);
  if (!op) out.push(say(`its op ${c.op} does not exist`));
  else {
    const reached = [c.op, ...importsOf(op.text).map((s) => resolve(c.op, s))];
    if (loaders.length && !reached.some((p) => loaders.includes(p))) {
      out.push(say(`its op ${c.op} neither dispatches it nor imports ${loaders.join(" or ")}`));
    }
  }
  const ref = files.get(c.ref);
  const home = c.op.startsWith(T) ? `${T}ref/` : c.op.split("/").slice(0, 2).join("/") + "/";
  if (!ref) out.push(say(`its CPU reference ${c.ref} does not exist`));
  else if (!c.ref.startsWith(home)) {
    out.push(say(`its CPU reference ${c.ref} is not under ${home}`));
  } else if (/\bgpu\(\)|\.dispatch\(|gpu\/mod\.ts/.test(stripComments(ref.text))) {
    out.push(say(`its CPU reference ${c.ref} uses the GPU (a reference is plain TS)`));
  }
  const test = files.get(c.test);
  if (!test || !c.test.endsWith("_test.ts")) out.push(say(`its test ${c.test} does not exist`));
  else {
    const calls = c.calls ?? (op ? exportsOf(op.text) : []);
    if (!mentions(test.text, calls)) out.push(say(`${c.test} calls none of ${calls.join(", ")}`));
    if (ref && !mentions(test.text, exportsOf(ref.text))) {
      out.push(say(`${c.test} uses nothing from its reference ${c.ref}`));
    }
  }
  return out;
}

Deno.test("every shader has a TS op, a plain-TS CPU reference and a test of both", async () => {
  const files = new Map((await projectFiles(ROOT)).map((f) => [f.path, f]));
  const names = shaderNames();
  const problems = names.flatMap((name) => coverageProblems(name, files));
  for (const name of Object.keys(COVERAGE)) {
    if (!names.includes(name)) problems.push(`COVERAGE names shaders/${name}.wgsl, which is gone`);
  }
  assert.deepEqual(problems, []);
});

Deno.test("every #include resolves and every include file is used", () => {
  const used = new Set<string>();
  for (const name of shaderNames()) {
    const code = shaderSource(name);
    assert.doesNotMatch(code, /^\s*#include/m, `shader "${name}" kept an #include`);
    for (const path of includesOf(name, readShaderFile)) used.add(path);
  }
  for (const path of includeFiles()) {
    assert.ok(used.has(path), `shaders/${path} is included by no shader: delete it or use it`);
  }
});

Deno.test("the browser bundle carries exactly the WGSL the Deno loader reads", () => {
  const body = shaderModule();
  const prefix = "export const SHADERS = ";
  assert.ok(body.startsWith(prefix), "web/build.ts's shader module has changed form");
  const bundled = JSON.parse(body.slice(prefix.length).trim().replace(/;$/, "")) as Record<
    string,
    string
  >;
  assert.deepEqual(Object.keys(bundled).sort(), shaderNames());
  for (const name of shaderNames()) {
    assert.equal(bundled[name], expandIncludes(name, readShaderFile), `shader "${name}"`);
  }
  registerShaderSources(bundled); // the browser's path through shaderSource
  for (const name of shaderNames()) assert.equal(shaderSource(name), bundled[name]);
});

/** A reader over an in-memory shaders/ folder. */
const fakeShaders = (files: Record<string, string>) => (path: string) => files[path];

Deno.test("#include pastes each file once per shader, recursively; errors name the files", () => {
  const read = fakeShaders({
    "k.wgsl": '#include "a.wgsl"\n#include "b.wgsl"\nfn main() {}\n',
    "include/a.wgsl": '#include "c.wgsl"\nfn a() {}\n',
    "include/b.wgsl": '#include "c.wgsl"\n#include "b.wgsl"\nfn b() {}\n',
    "include/c.wgsl": "fn c() {}\n",
    "bad.wgsl": 'fn x() {}\n#include "gone.wgsl"\n',
    "typo.wgsl": '#inclde "a.wgsl"\n',
    "bare.wgsl": "#include a.wgsl\n",
  });
  assert.equal(expandIncludes("k", read), "fn c() {}\nfn a() {}\nfn b() {}\nfn main() {}\n");
  assert.deepEqual(includesOf("k", read), ["include/a.wgsl", "include/c.wgsl", "include/b.wgsl"]);
  assert.throws(
    () => expandIncludes("bad", read),
    /shader "bad" \(bad.wgsl line 2\): #include "gone.wgsl" names a missing file, shaders\//,
  );
  assert.throws(
    () => expandIncludes("typo", read),
    /typo.wgsl line 1\): unknown directive "#inclde" \(only #include, #const, #unroll and #if/,
  );
  assert.throws(() => expandIncludes("bare", read), /write #include "file.wgsl"/);
  assert.throws(
    () => expandIncludes("none", read),
    /shader "none": no such file shaders\/none.wgsl/,
  );
});

Deno.test("#unroll writes its lines out once per value, nested; errors name the line", () => {
  const read = fakeShaders({
    "u.wgsl": "fn f() {\n#unroll i 3\n  acc$i = acc$i + x[$i * 2u];\n#end\n}\n",
    "n.wgsl": "#unroll r 2\n#unroll c 2 // inner\nv$r$c = $r + $c;\n#end\n#end\n",
    "near.wgsl": "#unroll k 2\nlet y$k = $kk + $k;\n#end\n",
    "open.wgsl": "fn f() {}\n#unroll i 2\nlet a = $i;\n",
    "stray.wgsl": "let a = 1;\n#end\n",
    "zero.wgsl": "#unroll i 0\n#end\n",
    "noname.wgsl": "#unroll 4\n#end\n",
  });
  assert.equal(
    expandIncludes("u", read),
    "fn f() {\n  acc0 = acc0 + x[0 * 2u];\n  acc1 = acc1 + x[1 * 2u];\n" +
      "  acc2 = acc2 + x[2 * 2u];\n}\n",
  );
  assert.equal(
    expandIncludes("n", read),
    "v00 = 0 + 0;\nv01 = 0 + 1;\nv10 = 1 + 0;\nv11 = 1 + 1;\n",
  );
  // $kk is another name, left alone (and left for WGSL to refuse).
  assert.equal(expandIncludes("near", read), "let y0 = $kk + 0;\nlet y1 = $kk + 1;\n");
  assert.throws(() => expandIncludes("open", read), /open.wgsl line 2\): #unroll without its #end/);
  assert.throws(
    () => expandIncludes("stray", read),
    /stray.wgsl line 2\): #end without an #unroll/,
  );
  assert.throws(() => expandIncludes("zero", read), /write #unroll NAME COUNT, COUNT from 1 to 64/);
  assert.throws(() => expandIncludes("noname", read), /write #unroll NAME COUNT/);
});

Deno.test("#const takes its value from the defines, typed, and insists on one", () => {
  const code = "#const WG: u32\n#const ON: bool // a switch\n#const S: f32;\nconst OP: u32 = 0u;";
  assert.equal(
    specialize(code, "k", { WG: 64, ON: true, S: 0.5, OP: 2 }),
    "const WG: u32 = 64u;\nconst ON: bool = true;\nconst S: f32 = 0.5;\nconst OP: u32 = 2;",
  );
  assert.throws(
    () => specialize(code, "k", { ON: true, S: 1 }),
    /shader "k" needs a value for #const WG: u32/,
  );
  assert.throws(
    () => specialize(code, "k", { WG: -1, ON: true, S: 1 }),
    /#const WG: -1 is not a u32/,
  );
  assert.throws(() => specialize("fn f() {}", "k", { WG: 1 }), /shader "k" has no '#const WG'/);
  // Every tensor shader declares its workgroup size this way: a spec without it cannot compile.
  assert.throws(() => specialize(shaderSource("swiglu"), "swiglu"), /needs a value for #const WG/);
});

Deno.test("#if keeps lines where the #const has the value (or not), after #unroll; errors", () => {
  const read = fakeShaders({
    "f.wgsl": "#const AT: u32\n#unroll h 2\n#if AT == $h\nfetch();\n#endif\nstep($h);\n#end\n",
  });
  const code = expandIncludes("f", read);
  assert.equal(
    specialize(code, "f", { AT: 1 }),
    "const AT: u32 = 1u;\nstep(0);\nfetch();\nstep(1);\n",
  );
  assert.equal(
    specialize(code, "f", { AT: 0 }),
    "const AT: u32 = 0u;\nfetch();\nstep(0);\nstep(1);\n",
  );
  const nested =
    "#const A: bool\n#const B: u32\n#if A == true\na;\n#if B == 2\nb;\n#endif\n#endif\nc;";
  assert.equal(
    specialize(nested, "k", { A: true, B: 2 }),
    "const A: bool = true;\nconst B: u32 = 2u;\na;\nb;\nc;",
  );
  assert.equal(
    specialize(nested, "k", { A: false, B: 2 }),
    "const A: bool = false;\nconst B: u32 = 2u;\nc;",
  );
  const unlike = "#const A: u32\n#if A != 2\nnot2;\n#endif\nc;";
  assert.equal(specialize(unlike, "k", { A: 1 }), "const A: u32 = 1u;\nnot2;\nc;");
  assert.equal(specialize(unlike, "k", { A: 2 }), "const A: u32 = 2u;\nc;");
  assert.throws(() => specialize("#if X == 1\n#endif", "k"), /#if X names no #const of the shader/);
  assert.throws(
    () => specialize("#const A: u32\n#if A\n#endif", "k", { A: 1 }),
    /write #if NAME == VALUE/,
  );
  assert.throws(
    () => specialize("#const A: u32\n#if A == 1\n", "k", { A: 1 }),
    /#if without its #endif/,
  );
  assert.throws(() => specialize("#endif", "k"), /#endif without an #if/);
});

Deno.test("defines are part of the pipeline cache key", () => {
  const a = kernelKey({ shader: "swiglu", entry: "forward", defines: { WG: 64 } });
  const b = kernelKey({ shader: "swiglu", entry: "forward", defines: { WG: 128 } });
  assert.notEqual(a, b);
  assert.equal(a, kernelKey({ shader: "swiglu", entry: "forward", defines: { WG: 64 } }));
  assert.ok(a.startsWith("swiglu:forward:"), "the profiler groups timings by shader:entry");
});
