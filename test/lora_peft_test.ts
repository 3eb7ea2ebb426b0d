/**
 * PEFT interop of LoRA adapters, on folders transformers wrote (test/fixtures/transformers_written):
 * an adapter folder laid out as `peft` writes it (adapter_config.json with PEFT's fields, tensors
 * `base_model.model.<module>.lora_A.weight` / `lora_B.weight`, no adapter name) loads and gives the
 * log-probs of the CPU reference forward of W + (alpha / r) B A; saving it and loading it back gives
 * identical log-probs; `deno task merge` writes a plain folder in the base's dtype whose log-probs
 * match; malformed or unsupported adapters are refused, naming the file and the field.
 */
import assert from "node:assert/strict";
import {
  fromFloat32,
  linearModules,
  readAdapterFolder,
  readModelFolder,
  readSafetensorsFile,
  serializeSafetensors,
  tensorToFloat32,
} from "../src/io/mod.ts";
import { loadModel, responseLogProbs, saveModel } from "../src/mod.ts";
import { mergeLoraRef, refLogits } from "../src/nn/mod.ts";
import { mergeLoraFolder } from "../src/trainer/mod.ts";
import { gpuTest, randomArray } from "../src/testing/mod.ts";
import { BASE, FIX, peftConfig, writePeftFixture } from "./peft_fixture.ts";

const IDS = [5, 17, 33, 40, 2, 61, 70, 12, 9, 44];
const seqs = [{ prompt: IDS.slice(0, 3), response: IDS.slice(3) }, {
  prompt: IDS.slice(0, 6),
  response: IDS.slice(6),
}];

gpuTest(
  "a PEFT-written adapter loads, saves, reloads and merges to the same log-probs",
  async () => {
    const tmp = Deno.makeTempDirSync({ prefix: "webrl_peft_" });
    try {
      await writePeftFixture(`${tmp}/peft`);
      const adapted = await loadModel(BASE, { adapter: `${tmp}/peft` });
      const got = (await responseLogProbs(adapted, seqs)).logProbs;

      // CPU reference: the merged weights through the plain-TS forward.
      const base = await readModelFolder(BASE);
      const f32 = new Map([...base.tensors].map(([k, t]) => [k, tensorToFloat32(t)]));
      const adapter = await readAdapterFolder(`${tmp}/peft`, base.config);
      assert.equal(adapter.adapters.size, 4);
      const merged = mergeLoraRef(base.config, f32, adapter.adapters, adapter.settings);
      const V = base.config.vocabSize;
      const logits = refLogits(base.config, merged, {
        inputIds: Int32Array.from(IDS),
        batch: 1,
        seqLen: IDS.length,
      });
      const want = IDS.slice(1).map((id, t) => {
        const row = logits.subarray(t * V, (t + 1) * V);
        const max = Math.max(...row);
        const lse = max + Math.log(row.reduce((a, v) => a + Math.exp(v - max), 0));
        return row[id] - lse;
      });
      const err = Math.max(...got[0].map((x, i) => Math.abs(x - want[i + 2])));
      assert.ok(err < 2e-4, `adapter log-probs vs reference: ${err}`);
      // Different from the base model.
      const plain = (await responseLogProbs(await loadModel(BASE), seqs)).logProbs;
      assert.ok(plain[0].some((x, i) => Math.abs(x - got[0][i]) > 1e-3));

      await saveModel(adapted, `${tmp}/saved`);
      const files = [...Deno.readDirSync(`${tmp}/saved`)].map((e) => e.name).sort();
      assert.ok(files.includes("adapter_config.json") && !files.includes("model.safetensors"));
      const again =
        (await responseLogProbs(await loadModel(BASE, { adapter: `${tmp}/saved` }), seqs))
          .logProbs;
      assert.deepEqual(again, got, "saved-then-loaded adapter gives identical log-probs");
      const saved = JSON.parse(Deno.readTextFileSync(`${tmp}/saved/adapter_config.json`));
      assert.deepEqual(saved.target_modules, ["q_proj", "v_proj"]);
      assert.equal(saved.lora_alpha, 8);

      const s = await mergeLoraFolder(BASE, `${tmp}/saved`, `${tmp}/merged`);
      assert.equal(s.modules, 4);
      const fromMerged = (await responseLogProbs(await loadModel(`${tmp}/merged`), seqs)).logProbs;
      fromMerged.forEach((row, b) =>
        row.forEach((x, i) => assert.ok(Math.abs(x - got[b][i]) < 1e-4, `merged ${b},${i}`))
      );
    } finally {
      Deno.removeSync(tmp, { recursive: true });
    }
  },
);

Deno.test("merge keeps a bf16 base bf16 and leaves untargeted tensors byte-identical", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "webrl_merge_" });
  try {
    const base = `${FIX}/llama_bf16`;
    const cfg = (await readModelFolder(base, { tensors: false })).config;
    const shapes = linearModules(cfg);
    Deno.mkdirSync(`${tmp}/ad`);
    Deno.writeTextFileSync(
      `${tmp}/ad/adapter_config.json`,
      JSON.stringify(peftConfig({ target_modules: ["down_proj"], r: 2, lora_alpha: 4 })),
    );
    const tensors = [...shapes].filter(([m]) => m.endsWith("down_proj")).flatMap(([m, [o, i]]) =>
      [["A", [2, i]], ["B", [o, 2]]].map(([w, sh], k) => ({
        name: `base_model.model.${m}.lora_${w}.weight`,
        dtype: "F32" as const,
        shape: sh as number[],
        bytes: fromFloat32(randomArray((sh as number[])[0] * (sh as number[])[1], k + 3), "F32"),
      }))
    );
    Deno.writeFileSync(`${tmp}/ad/adapter_model.safetensors`, serializeSafetensors(tensors));
    await mergeLoraFolder(base, `${tmp}/ad`, `${tmp}/out`);
    const out = await readSafetensorsFile(`${tmp}/out/model.safetensors`);
    const orig = new Map((await readSafetensorsFile(`${base}/model.safetensors`)).tensors
      .map((t) => [t.name, t]));
    assert.match(Deno.readTextFileSync(`${tmp}/out/config.json`), /"bfloat16"/);
    for (const t of out.tensors) {
      assert.equal(t.dtype, orig.get(t.name)!.dtype, t.name);
      const same = t.bytes.every((b, i) => b === orig.get(t.name)!.bytes[i]);
      assert.equal(same, !t.name.includes("down_proj"), t.name);
    }
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("unsupported or malformed adapters are refused, naming the file and field", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "webrl_peft_bad_" });
  const cfg = (await readModelFolder(BASE, { tensors: false })).config;
  const refuse = async (extra: Record<string, unknown>, why: RegExp) => {
    const dir = `${tmp}/${Math.random().toString(36).slice(2)}`;
    await writePeftFixture(dir, extra);
    await assert.rejects(() => readAdapterFolder(dir, cfg), why);
  };
  try {
    await refuse({ use_dora: true }, /adapter_config\.json: use_dora=true: DoRA/);
    await refuse({ lora_bias: true }, /lora_bias/);
    await refuse({ rank_pattern: { q_proj: 8 } }, /rank_pattern/);
    await refuse({ peft_type: "IA3" }, /peft_type "IA3" is not "LORA"/);
    await refuse({ init_lora_weights: "pissa_niter_4" }, /init_lora_weights="pissa_niter_4".*base/);
    await refuse({ init_lora_weights: "olora" }, /path_initial_model_for_weight_conversion/);
    await refuse({ init_lora_weights: "mica" }, /MiCA/);
    await refuse({ r: 8 }, /lora_A\.weight has 256 values, expected 512/);
    await refuse({ target_modules: ["q_proj"] }, /v_proj\.lora_A\.weight belongs to no targeted/);
    await refuse({ target_modules: ["k_proj", "q_proj", "v_proj"] }, /missing tensor .*k_proj/);
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});

Deno.test("a verl actor checkpoint folder reads the adapter in its lora_adapter/", async () => {
  const tmp = Deno.makeTempDirSync({ prefix: "webrl_peft_verl_" });
  try {
    const cfg = (await readModelFolder(BASE, { tensors: false })).config;
    // verl writes the whole LoraConfig (inference_mode false, runtime_config, ...) there.
    await writePeftFixture(`${tmp}/actor/lora_adapter`, {
      inference_mode: false,
      runtime_config: { ephemeral_gpu_offload: false },
    });
    const adapter = await readAdapterFolder(`${tmp}/actor`, cfg);
    assert.equal(adapter.adapters.size, 4);
    await assert.rejects(
      () => readAdapterFolder(`${tmp}/none`, cfg),
      /missing .*none\/adapter_config\.json \(nor .*none\/lora_adapter\/adapter_config\.json/,
    );
  } finally {
    Deno.removeSync(tmp, { recursive: true });
  }
});
