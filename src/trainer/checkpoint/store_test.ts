import assert from "node:assert/strict";
import {
  charTokenizerTexts,
  fromFloat32,
  parseModelConfig,
  readModelFolder,
  readSafetensorsFile,
  tensorToFloat32,
} from "../../io/mod.ts";
import { CausalLM, TINY_FAMILIES, tinyWeights } from "../../nn/mod.ts";
import { gpuTest } from "../../testing/mod.ts";
import { makeOptimizer } from "../build.ts";
import type { ExtraState } from "./extra_state.ts";
import { FolderCheckpointStore, writeModel } from "./store.ts";

const GENERATION =
  '{\n  "eos_token_id": 1,\n  "top_k": 20,\n  "transformers_version": "5.0.0"\n}\n';

/** A tiny bf16 Qwen2.5 folder as transformers 5 writes it, with its model and optimizer. */
function bf16Model(seed: number, weights?: Map<string, Float32Array>) {
  const config = parseModelConfig({ ...TINY_FAMILIES["qwen2.5 (5.x)"], dtype: "bfloat16" });
  const model = CausalLM.fromTensors(
    config,
    weights ?? tinyWeights(config, { seed, init: "varied" }),
  );
  const optimizer = makeOptimizer(model.params(), {
    lr: 1e-3,
    betas: [0.9, 0.999],
    weight_decay: 0,
  });
  return { config, model, optimizer };
}

gpuTest(
  "a bf16 model is saved bf16 (rounded to nearest even), its files and spelling intact",
  async () => {
    const dir = await Deno.makeTempDir();
    const m = bf16Model(3);
    const files = { ...charTokenizerTexts(), "generation_config.json": GENERATION };
    await writeModel(`${dir}/actor`, { ...m, files });
    const { tensors } = await readSafetensorsFile(`${dir}/actor/model.safetensors`);
    assert.ok(tensors.every((t) => t.dtype === "BF16"), "every tensor BF16");
    const weights = await m.model.toArrays();
    for (const t of tensors) {
      assert.deepEqual(t.bytes, fromFloat32(weights.get(t.name)!, "BF16"), t.name);
    }
    // Half of f32's bytes, plus the header.
    const size = (await Deno.stat(`${dir}/actor/model.safetensors`)).size;
    const f32Bytes = [...weights.values()].reduce((n, w) => n + 4 * w.length, 0);
    assert.ok(size < f32Bytes * 0.55, `${size} bytes for ${f32Bytes} f32 bytes`);
    const config = JSON.parse(await Deno.readTextFile(`${dir}/actor/config.json`));
    assert.equal(config.dtype, "bfloat16");
    assert.deepEqual(config.rope_parameters, { rope_theta: 1000000.0, rope_type: "default" });
    for (const k of ["rope_theta", "torch_dtype", "rope_scaling"]) {
      assert.equal(
        k in config,
        false,
        k,
      );
    }
    const folder = await readModelFolder(`${dir}/actor`);
    assert.deepEqual(folder.files, files);
    m.model.dispose();
    await Deno.remove(dir, { recursive: true });
  },
);

gpuTest("resuming from a bf16 checkpoint restores the f32 master weights exactly", async () => {
  const root = await Deno.makeTempDir();
  const a = bf16Model(5);
  const store = (m: ReturnType<typeof bf16Model>, resume: string | null) =>
    new FolderCheckpointStore({
      root,
      parts: { actor: m },
      configYaml: "",
      resume: resume ? { path: resume, step: 1, extra: {} as ExtraState } : null,
    });
  await store(a, null).save(1, {});
  const path = `${root}/global_step_1`;
  const opt = await readSafetensorsFile(`${path}/actor/optimizer.safetensors`);
  assert.equal(
    opt.tensors.filter((t) => t.name.startsWith("w.")).length,
    a.optimizer.params.length,
  );
  // A new run loads the rounded folder, then the optimizer state brings back the f32 values.
  const folder = await readModelFolder(`${path}/actor`);
  const b = bf16Model(0, new Map([...folder.tensors].map(([n, t]) => [n, tensorToFloat32(t)])));
  const rounded = await b.model.toArrays();
  assert.notDeepEqual(rounded, await a.model.toArrays());
  const versions = b.optimizer.params.map((p) => p.version);
  await store(b, path).resume();
  assert.deepEqual(await b.model.toArrays(), await a.model.toArrays());
  // the step count is 0 before and after: the weights' versions are what says they changed
  assert.equal(b.optimizer.adamw.stepCount, 0);
  b.optimizer.params.forEach((p, i) => assert.ok(p.version > versions[i], p.label));
  assert.equal(folder.config.torchDtype, "bfloat16");
  a.model.dispose();
  b.model.dispose();
  await Deno.remove(root, { recursive: true });
});
