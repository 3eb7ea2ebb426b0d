/**
 * LoRA vs full fine-tuning: one GRPO step (gen, reward, old_log_prob, ref, adv, update_actor, as
 * `fit()` runs them) on the Qwen2.5-0.5B and 1.5B shapes with cheap random weights (`randomArrays`:
 * drawing 1.5B normals took minutes of each child's time limit). Each (shape, mode)
 * runs in its own process so the peak GPU memory is its own; prints JSON lines and a summary with
 * the ratios the LoRA targets are about (peak memory LoRA / full, update tokens/s LoRA / full).
 * The LoRA child also times merging every adapter into a copy of its weight (W + s B A on the GPU),
 * the per-step cost of a merged-weights rollout, against the rollout it would replace.
 *
 *   deno run -A bench/lora_device.ts                         # both shapes, full and LoRA r=32
 *   deno run -A bench/lora_device.ts --shapes=1.5b --rank=32 --prompts=8 --n=8
 *   deno run -A bench/lora_device.ts --shapes=tiny           # a CPU-adapter smoke run
 *   ... --rollout=adapters   # the LoRA run decodes through the adapters, not a merged copy
 *   deno run -A bench/lora_device.ts --rollout-compare --shapes=0.5b,1.5b [--batch=64]
 *                            # decode through adapters vs merge + decode, same model, alternated
 *   ... --keep-logits-gb=G   # actor.keep_logits_gb: the update's LM-head logits kept within G GB
 *   ... --profile=N          # the last step's N kernels with the most GPU time in update_actor,
 *                            # then every kernel's time summed by role (`kernel_roles_ms`)
 */
import { initGpu, type KernelSpan, kernelTotals } from "../src/gpu/mod.ts";
import { charTokenizer, type ModelConfig } from "../src/io/mod.ts";
import { CausalLM, initLora, loraSettings } from "../src/nn/mod.ts";
import { randomArrays } from "./bench_model.ts";
import { generate } from "../src/rollout/mod.ts";
import { rolloutFor, trainStep } from "../src/trainer/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import {
  benchParts,
  coinFlipReward,
  grpoStepOverrides,
  isQwen25Shape,
  lcg,
  qwen25Config,
  randomPrompts,
} from "./grpo_setup.ts";
import {
  add,
  cast,
  loadPolicy,
  matmul,
  mulScalar,
  noGrad,
  scope,
  splitPolicy,
  type Tensor,
} from "../src/tensor/mod.ts";

/** A Qwen2.5 shape, or "tiny" (a 2-layer model over 512 ids) for a CPU adapter. */
function benchConfig(shape: string): ModelConfig {
  if (shape === "tiny") {
    return qwen25Config("0.5b", {
      hiddenSize: 64,
      intermediateSize: 192,
      numHiddenLayers: 2,
      numAttentionHeads: 4,
      numKeyValueHeads: 2,
      vocabSize: 512,
    });
  }
  if (!isQwen25Shape(shape)) throw new Error(`--shapes: ${shape} is not 0.5b, 1.5b or tiny`);
  return qwen25Config(shape);
}

const opt = (name: string, d: string) =>
  Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d;
const num = (name: string, d: number) => Number(opt(name, String(d)));

/** One (shape, mode) in this process: JSON lines on stdout, the last one the result. */
async function child(shape: string, rank: number): Promise<void> {
  const prompts = num("prompts", 8), n = num("n", 8), P = num("prompt-len", 128);
  const R = num("response-len", 256), micro = num("micro", 8), steps = num("steps", 2);
  const g = await initGpu();
  const config = benchConfig(shape);
  const vocab = config.vocabSize;
  const tensors = randomArrays(config);
  const rand = lcg(1);
  const items = randomPrompts(prompts * (steps + 1), {
    promptLength: P,
    ids: [0, vocab - 1],
    rand,
  });
  const reward = coinFlipReward(rand);
  const cfg = loadConfig("ppo_trainer", {
    skipPathChecks: true,
    overrides: [
      ...grpoStepOverrides({ prompts, n, promptLength: P, responseLength: R, micro }),
      "actor_rollout_ref.rollout.ignore_eos=true",
      // GRPO with a KL loss: the reference forward runs (adapters off with LoRA, a copy if full).
      "actor_rollout_ref.actor.use_kl_loss=true",
      `actor_rollout_ref.model.lora_rank=${rank}`,
      `actor_rollout_ref.model.lora_alpha=${2 * rank || 16}`,
      `actor_rollout_ref.model.enable_gradient_checkpointing=${num("checkpointing", 0) !== 0}`,
      `actor_rollout_ref.actor.keep_logits_gb=${num("keep-logits-gb", 0)}`,
    ],
  });
  const parts = benchParts({ config: cfg, model: config, tensors, items, reward });
  tensors.clear();
  // --rollout=adapters: decode through the adapters instead of a merged copy.
  const adapters = opt("rollout", "merged") === "adapters";
  if (adapters) {
    parts.rollout = rolloutFor(parts.actor.model as CausalLM, charTokenizer(), [vocab - 1], {
      mergeLora: false,
    });
  }
  const mode = rank > 0 ? `lora_r${rank}${adapters ? "_adapters" : ""}` : "full";
  const trainable = parts.actor.optimizer.params.reduce((a, p) => a + p.size, 0);
  console.log(JSON.stringify({ adapter: g.adapterName, f16: g.hasF16, shape, mode, trainable }));
  let last: Record<string, number> = {};
  if (num("splitk", 1) === 0) splitPolicy.minStages = Infinity;
  // --waves=0: the split rule that ignores the GPU's multiprocessor count (before/after runs).
  if (num("waves", 1) === 0) splitPolicy.waves = false;
  // --vec4=0: the tiled GEMM reads its operands one element at a time; --exact=0: it checks
  // bounds on whole blocks too (before/after runs).
  if (num("vec4", 1) === 0) loadPolicy.vec4 = false;
  if (num("exact", 1) === 0) loadPolicy.exact = false;
  for (let step = 1; step <= steps; step++) {
    const run = () => trainStep(parts, step, parts.trainLoader.next()!);
    let m: Record<string, number> = {};
    if (step === steps && num("profile", 0) > 0) {
      const spans: KernelSpan[] = [];
      await g.profile(async () => void (m = await run()), { spans, maxPasses: 1 << 20 });
      const rows = kernelTotals(spans, { lastMs: m["timing_s/update_actor"] * 1000 });
      for (const r of rows.slice(0, num("profile", 0))) {
        const ms = Math.round(r.ms * 10) / 10;
        console.log(
          JSON.stringify({ fig: "kernel", shape, mode, ms, count: r.count, key: r.kernel }),
        );
      }
      const groups: Record<string, number> = {};
      for (const r of rows) {
        const role = kernelRole(r.kernel);
        groups[role] = (groups[role] ?? 0) + r.ms;
      }
      for (const k in groups) groups[k] = Math.round(groups[k]);
      console.log(JSON.stringify({ fig: "kernel_roles_ms", shape, mode, ...groups }));
    } else m = await run();
    const genTokens = prompts * n * m["response_length/mean"];
    last = {
      step,
      step_s: m["timing_s/step"],
      gen_s: m["timing_s/gen"],
      ref_s: m["timing_s/ref"] ?? 0,
      update_s: m["timing_s/update_actor"],
      gen_tok_per_s: Math.round(genTokens / m["timing_s/gen"]),
      update_tok_per_s: Math.round((prompts * n * (P + R)) / m["timing_s/update_actor"]),
      peak_gb: Math.round(g.pool.peakBytes / 1e7) / 100,
    };
    console.log(JSON.stringify({ fig: "lora_step", shape, mode, ...last }));
  }
  const model = parts.actor.model as CausalLM;
  if (model.lora) last.merge_s = await mergeSeconds(model);
  console.log(JSON.stringify({ fig: "lora_result", shape, mode, ...last }));
}

/**
 * What a profiled kernel does in the update, from its pipeline key: the products by layout
 * (forward x W^T, input gradient g W, weight gradient g^T x: the same three for the LM head's
 * chunks), the small-tile products (TM=4: at these shapes the adapters' rank-r ones), attention,
 * the other layers' kernels, split-K sums, the loss and log-prob rows, gradient sums and scaling,
 * and the optimizer with its gradient norm.
 */
export function kernelRole(key: string): string {
  const [name, entry] = key.split(":");
  if (name.startsWith("attention") || /CAUSAL=[1-9]/.test(key)) return "attention";
  if (name === "matmul_bias") return "weight_grad";
  if (name === "matmul" || name === "matmul_cat") {
    if (key.includes("TM=4,")) return "small_tile_products";
    if (key.includes("TRANS_A=true")) return "weight_grad";
    return key.includes("TRANS_B=true") ? "forward" : "input_grad";
  }
  if (name === "matmul_splitk") return "split_sums";
  if (name === "axpy" || (name === "basic" && entry === "scale")) return "grad_sums_scale";
  if (["adamw", "grad_norm", "grad_norm_finish"].includes(name)) return "optimizer";
  if (name === "basic" && entry === "fill") return "optimizer";
  if (name.startsWith("lm_head_logprob") || name.startsWith("ppo_loss")) return "loss_rows";
  return "layers_other";
}

/** Seconds to build W + s B A for every adapted module (what a merged rollout pays per step). */
async function mergeSeconds(model: CausalLM): Promise<number> {
  const lora = model.lora!;
  const weights = model.params();
  const run = () =>
    noGrad(() => {
      const out: Tensor[] = [];
      for (const [m, p] of lora.pairs) {
        const w = weights.get(`${m}.weight`)!;
        out.push(
          scope(() => {
            const delta = mulScalar(matmul(p.b, p.a), p.scale); // [out, in]
            const sum = add(w.dtype === "f32" ? w : cast(w, "f32"), delta);
            return w.dtype === "f32" ? sum : cast(sum, w.dtype);
          }).keep(),
        );
      }
      return out;
    });
  const time = async () => {
    const t0 = performance.now();
    const out = run();
    await out[0].toArray(); // waits for the queue
    const s = (performance.now() - t0) / 1000;
    for (const t of out) t.dispose();
    return s;
  };
  await time(); // pipelines compiled
  return Math.round((await time()) * 1000) / 1000;
}

/** Runs every (shape, mode) in a child process and prints the ratios. */
async function parent(): Promise<void> {
  const shapes = opt("shapes", "0.5b,1.5b").split(",");
  const rank = num("rank", 32);
  const pass = Deno.args.filter((a) => !a.startsWith("--shapes=") && !a.startsWith("--rank="));
  const results: Record<string, Record<string, number>> = {};
  for (const shape of shapes) {
    for (const r of [0, rank]) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", new URL(import.meta.url).pathname, `--child=${shape}:${r}`, ...pass],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
      for (const l of lines) console.log(l);
      const res = lines.map((l) => JSON.parse(l)).find((j) => j.fig === "lora_result");
      if (!out.success || !res) {
        console.log(JSON.stringify({ shape, rank: r, error: `exit ${out.code}` }));
        continue;
      }
      results[`${shape}:${r}`] = res;
    }
    const full = results[`${shape}:0`], lora = results[`${shape}:${rank}`];
    if (full && lora) {
      console.log(JSON.stringify({
        fig: "lora_vs_full",
        shape,
        rank,
        peak_gb: { full: full.peak_gb, lora: lora.peak_gb },
        peak_ratio: Math.round((lora.peak_gb / full.peak_gb) * 1000) / 1000,
        update_tok_per_s: { full: full.update_tok_per_s, lora: lora.update_tok_per_s },
        update_speedup: Math.round((lora.update_tok_per_s / full.update_tok_per_s) * 100) / 100,
        rollout: opt("rollout", "merged"),
        gen_tok_per_s: { full: full.gen_tok_per_s, lora: lora.gen_tok_per_s },
        merge_s: lora.merge_s,
        gen_s: { full: full.gen_s, lora: lora.gen_s },
      }));
    }
  }
}

/**
 * The rollout choice, measured in one process on one model: decode through the adapters vs merge
 * them into a copy (timed with the decode) and decode that; alternated `--repeats` times.
 */
async function compareRollout(shape: string, rank: number): Promise<void> {
  const B = num("batch", 64), P = num("prompt-len", 128), R = num("response-len", 256);
  const repeats = num("repeats", 3);
  const g = await initGpu();
  const config = benchConfig(shape);
  const vocab = config.vocabSize;
  const settings = loraSettings({ rank, alpha: 2 * rank });
  const lora = { settings, arrays: initLora(config, settings) };
  const model = CausalLM.fromTensors(config, randomArrays(config), {
    lora,
    dtype: g.hasF16 ? "f16" : "f32",
  });
  const rand = lcg(3);
  const ids = Int32Array.from({ length: B * P }, () => Math.floor(rand() * (vocab - 1)));
  const decode = (m: CausalLM) =>
    generate(m, {
      inputIds: ids,
      attentionMask: new Int32Array(B * P).fill(1),
      batch: B,
      promptLength: P,
      responseLength: R,
      temperature: 1,
      topK: 0,
      topP: 1,
      doSample: true,
      eosTokenIds: [],
      padTokenId: 0,
      seed: 1,
    });
  const times: Record<string, number[]> = { adapters: [], merged: [] };
  await decode(model); // pipelines compiled
  for (let i = 0; i < repeats; i++) {
    let t0 = performance.now();
    await decode(model);
    times.adapters.push((performance.now() - t0) / 1000);
    t0 = performance.now();
    const merged = model.withMergedAdapters();
    await decode(merged);
    merged.dispose();
    times.merged.push((performance.now() - t0) / 1000);
  }
  const median = (x: number[]) => [...x].sort((a, b) => a - b)[Math.floor(x.length / 2)];
  console.log(JSON.stringify({
    fig: "lora_rollout",
    adapter: g.adapterName,
    shape,
    rank,
    B,
    P,
    R,
    adapters_s: median(times.adapters),
    merged_incl_merge_s: median(times.merged),
    merge_s: await mergeSeconds(model),
    all: times,
  }));
}

if (import.meta.main) {
  const which = opt("child", "");
  if (Deno.args.includes("--rollout-compare")) {
    for (const shape of opt("shapes", "0.5b").split(",")) {
      await compareRollout(shape, num("rank", 32));
    }
  } else if (which) {
    const [shape, r] = which.split(":");
    await child(shape, Number(r));
  } else await parent();
}
