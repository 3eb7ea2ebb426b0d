/**
 * Mixed precision in the trainer: the optimizer step under a loss scale (unscaled norm and update,
 * a skipped step on an inf gradient), and the fsdp_config keys (accepted, refused, notices).
 */
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../config/mod.ts";
import { gpu } from "../gpu/mod.ts";
import { AdamW, HalfWeights } from "../nn/mod.ts";
import { sum, Tensor } from "../tensor/mod.ts";
import { assertClose, gpuTest, randomArray } from "../testing/mod.ts";
import { LossScaler } from "./loss_scaler.ts";
import {
  failedSteps,
  type Optimizer,
  optimizerStep,
  scaledBackward,
  stepMetrics,
} from "./optimizer_step.ts";
import { applyPrecision, trainPrecision } from "./precision.ts";

const OPTS = { lr: 0.01, betas: [0.9, 0.999] as [number, number], eps: 1e-8, weightDecay: 0.1 };

/** A parameter with gradient `g` (as a backward would leave it), under an optimizer. */
function setup(p0: Float32Array, scaler: LossScaler | null) {
  const param = Tensor.from(p0, [p0.length]).keep();
  param.requiresGrad = true;
  const adamw = new AdamW([param], OPTS);
  const opt: Optimizer = { adamw, params: [param], scaler };
  return { param, adamw, opt };
}

gpuTest("a loss-scaled step equals the unscaled one: norm, clip and AdamW see g / S", async () => {
  const n = 300, p0 = randomArray(n, 1), g = randomArray(n, 2, -2, 2);
  const plain = setup(p0, null), scaled = setup(p0, new LossScaler({ initScale: 1024 }));
  plain.param.grad = Tensor.from(g, [n]).keep();
  scaled.param.grad = Tensor.from(g.map((v) => v * 1024), [n]).keep();
  const a = await optimizerStep(plain.opt, { lr: 0.01, gradClip: 1 });
  const b = await optimizerStep(scaled.opt, { lr: 0.01, gradClip: 1 });
  assert.equal(b.skipped, false);
  assertClose([b.gradNorm], [a.gradNorm], { rtol: 1e-6, label: "grad_norm" });
  assertClose(await scaled.param.toArray(), await plain.param.toArray(), {
    atol: 1e-7,
    rtol: 1e-6,
    label: "weights",
  });
  assert.deepEqual(scaled.opt.scaler!.state(), { scale: 1024, goodSteps: 1 });
  assert.equal(b.overflow, false);
  const skips = { skipped: 0, overflows: 0 };
  assert.deepEqual(stepMetrics("actor", scaled.opt, skips), {
    "actor/skipped_steps": 0,
    "actor/loss_scale": 1024,
    "actor/overflow_steps": 0,
  });
  assert.deepEqual(stepMetrics("actor", plain.opt, skips), { "actor/skipped_steps": 0 });
});

gpuTest(
  "an inf gradient under loss scaling skips the step: weights, moments, step count kept",
  async () => {
    const n = 64, p0 = randomArray(n, 3);
    const { param, adamw, opt } = setup(p0, new LossScaler());
    // one good step first, so the moments are not zero
    param.grad = Tensor.from(randomArray(n, 4), [n]).keep();
    await optimizerStep(opt, { lr: 0.01, gradClip: 1 });
    const before = {
      w: await param.toArray(),
      m: await adamw.m[0].toArray(),
      v: await adamw.v[0].toArray(),
    };
    const g = randomArray(n, 5);
    g[17] = Infinity; // an f16 overflow in the backward
    param.grad = Tensor.from(g, [n]).keep();
    const st = await optimizerStep(opt, { lr: 0.01, gradClip: 1 });
    assert.equal(st.skipped, true);
    assert.equal(Number.isFinite(st.gradNorm), false);
    assert.deepEqual(await param.toArray(), before.w);
    assert.deepEqual(await adamw.m[0].toArray(), before.m);
    assert.deepEqual(await adamw.v[0].toArray(), before.v);
    assert.equal(adamw.stepCount, 1, "a skipped step does not advance AdamW's step");
    assert.equal(opt.scaler!.scale, 2 ** 15, "the scale halves");
    assert.equal(param.grad, null, "the gradients are zeroed for the next step");
  },
);

gpuTest(
  "an overflow at scale 2 is the scaler's (not counted as failed) though it leaves the scale at 1",
  async () => {
    const n = 8;
    const inf = () => {
      const g = randomArray(n, 6);
      g[3] = Infinity;
      return Tensor.from(g, [n]).keep();
    };
    const scaled = setup(randomArray(n, 7), new LossScaler({ initScale: 2 }));
    const plain = setup(randomArray(n, 7), null);
    const metricsOf = async (s: typeof scaled) => {
      s.param.grad = inf();
      const st = await optimizerStep(s.opt, { lr: 0.01, gradClip: 1 });
      assert.equal(st.skipped, true);
      const m = stepMetrics("actor", s.opt, { skipped: 1, overflows: st.overflow ? 1 : 0 });
      return { m, failed: failedSteps(m, "actor") };
    };
    const first = await metricsOf(scaled);
    assert.equal(first.m["actor/loss_scale"], 1, "the backoff took the scale from 2 to 1");
    assert.equal(first.m["actor/overflow_steps"], 1);
    assert.equal(first.failed, 0, "a skip under scale 2 does not count towards the limit");
    const second = await metricsOf(scaled);
    assert.equal(second.m["actor/loss_scale"], 0.5);
    assert.equal(second.failed, 1, "not finite at scale 1: a failed update, as in f32");
    assert.equal((await metricsOf(plain)).failed, 1, "without loss scaling every skip counts");
    assert.equal(failedSteps({}, "critic"), 0, "no update, nothing skipped");
  },
);

gpuTest("scaledBackward seeds the backward with the loss scale", async () => {
  const x = Tensor.from([1, 2, 3], [3]).keep();
  x.requiresGrad = true;
  const { opt } = setup(new Float32Array(1), new LossScaler({ initScale: 4 }));
  scaledBackward(sum(x), opt);
  assert.deepEqual([...await x.grad!.toArray()], [4, 4, 4]);
});

gpuTest("HalfWeights: one f16 copy per weight until the weight is written", async () => {
  const cache = new HalfWeights();
  const w = Tensor.from([1, 2, 3, 4], [2, 2]).keep();
  const other = Tensor.from([5, 6], [2]).keep();
  const a = cache.get(w), b = cache.get(w);
  assert.equal(a, b);
  assert.equal(a.dtype, "f16");
  const kept = cache.get(other);
  // a load (checkpoint, weights set from outside): no optimizer step, and the copy follows it
  w.write([8, 7, 6, 5]);
  const c = cache.get(w);
  assert.notEqual(c, a);
  assert.equal(a.disposed, true);
  assert.deepEqual([...await c.toArray()], [8, 7, 6, 5]);
  assert.equal(cache.get(other), kept, "an unwritten weight keeps its copy");
  // an AdamW step writes the weights it updates
  const { param, adamw } = setup(new Float32Array([1, 2]), null);
  const d = cache.get(param);
  param.grad = Tensor.from([1, 1], [2]).keep();
  adamw.step();
  assert.notEqual(cache.get(param), d);
  assert.equal(cache.size, 3);
}, { f16: true });

const KEY = "actor_rollout_ref.actor.fsdp_config";

function config(overrides: string[]) {
  return loadConfig("ppo_trainer", { overrides, skipPathChecks: true });
}

gpuTest(
  "fsdp_config: verl's keys at their one-GPU values load; offload and other dtypes are refused",
  () => {
    const c = config([
      `${KEY}.param_offload=False`,
      `${KEY}.optimizer_offload=false`,
      `${KEY}.fsdp_size=-1`,
      `${KEY}.mixed_precision.param_dtype=bf16`,
      "critic.model.fsdp_config.mixed_precision.param_dtype=fp16",
    ]);
    assert.equal(c.actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype, "bf16");
    assert.equal(c.critic.model.fsdp_config.mixed_precision.param_dtype, "fp16");
    for (
      const bad of [
        `${KEY}.param_offload=True`,
        `${KEY}.optimizer_offload=true`,
        `${KEY}.fsdp_size=8`,
        `${KEY}.mixed_precision.reduce_dtype=bf16`,
        `${KEY}.mixed_precision.param_dtype=fp8`,
      ]
    ) {
      assert.throws(() => config([bad]), (e: Error) => {
        assert.ok(e instanceof ConfigError, `${bad}: ${e}`);
        assert.match(e.message, new RegExp(bad.split("=")[0].split(".").at(-1)!));
        return true;
      });
    }
  },
);

gpuTest(
  "param_dtype on this GPU: fp32 as is; fp16 / bf16 mixed, with one notice where it differs",
  () => {
    const lines: string[] = [];
    const o = { key: `${KEY}.mixed_precision.param_dtype`, notice: (l: string) => lines.push(l) };
    assert.equal(trainPrecision("fp32", o), "f32");
    assert.deepEqual(lines, []);
    const half = gpu().hasF16;
    assert.equal(trainPrecision("fp16", o), half ? "f16" : "f32");
    assert.equal(lines.length, half ? 0 : 1);
    if (!half) assert.match(lines[0], /no shader-f16, so training runs in f32/);
    lines.length = 0;
    assert.equal(trainPrecision("bfloat16", o), half ? "f16" : "f32");
    assert.equal(lines.length, 1);
    assert.match(lines[0], half ? /WebGPU has no bf16/ : /no shader-f16/);
    // f32 leaves the model and optimizer alone; f16 adds the copies and a scaler
    const model = { mixedPrecision: null as HalfWeights | null };
    const { opt } = setup(new Float32Array(2), null);
    assert.equal(applyPrecision("f32", model, opt), opt);
    assert.equal(model.mixedPrecision, null);
    const mixed = applyPrecision("f16", model, opt);
    assert.equal(mixed.scaler?.scale, 2 ** 16);
    assert.ok(model.mixedPrecision);
  },
);
