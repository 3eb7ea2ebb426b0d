/**
 * Adapter folders laid out as `peft` writes them, over a base transformers wrote
 * (test/fixtures/transformers_written): PEFT's adapter_config.json fields and tensor names, with
 * modules_to_save tensors (`base_model.model.<name>`) where given.
 */
import {
  fromFloat32,
  linearModules,
  readModelFolder,
  serializeSafetensors,
} from "../src/io/mod.ts";
import { randomArray } from "../src/testing/mod.ts";

export const FIX = new URL("./fixtures/transformers_written", import.meta.url).pathname;
export const BASE = `${FIX}/qwen2_tied`;

/** adapter_config.json with the fields PEFT 0.17's LoraConfig saves (set order kept as PEFT's). */
export function peftConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    alpha_pattern: {},
    auto_mapping: null,
    base_model_name_or_path: "qwen2_tied",
    bias: "none",
    corda_config: null,
    eva_config: null,
    exclude_modules: null,
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    layer_replication: null,
    layers_pattern: null,
    layers_to_transform: null,
    loftq_config: {},
    lora_alpha: 8,
    lora_bias: false,
    lora_dropout: 0.05,
    megatron_config: null,
    megatron_core: "megatron.core",
    modules_to_save: null,
    peft_type: "LORA",
    qalora_group_size: 16,
    r: 4,
    rank_pattern: {},
    revision: null,
    target_modules: ["v_proj", "q_proj"],
    target_parameters: null,
    task_type: "CAUSAL_LM",
    trainable_token_indices: null,
    use_dora: false,
    use_qalora: false,
    use_rslora: false,
    ...extra,
  };
}

/** Writes an adapter folder byte by byte as peft does: random A and B on q_proj and v_proj. */
export async function writePeftFixture(
  dir: string,
  extra: Record<string, unknown> = {},
  saved: Record<string, { shape: number[]; data: Float32Array }> = {},
) {
  const folder = await readModelFolder(BASE, { tensors: false });
  const shapes = linearModules(folder.config);
  Deno.mkdirSync(dir, { recursive: true });
  Deno.writeTextFileSync(`${dir}/adapter_config.json`, JSON.stringify(peftConfig(extra), null, 2));
  const tensors = [];
  let seed = 1;
  for (const [m, [out, inF]] of shapes) {
    if (!/(q|v)_proj$/.test(m)) continue;
    for (const [w, shape] of [["A", [4, inF]], ["B", [out, 4]]] as const) {
      const x = randomArray(shape[0] * shape[1], seed++, -0.3, 0.3);
      tensors.push({
        name: `base_model.model.${m}.lora_${w}.weight`,
        dtype: "F32" as const,
        shape: [...shape],
        bytes: fromFloat32(x, "F32"),
      });
    }
  }
  for (const [name, t] of Object.entries(saved)) {
    tensors.push({
      name: `base_model.model.${name}`,
      dtype: "F32" as const,
      shape: t.shape,
      bytes: fromFloat32(t.data, "F32"),
    });
  }
  Deno.writeFileSync(
    `${dir}/adapter_model.safetensors`,
    serializeSafetensors(tensors, { metadata: { format: "pt" } }),
  );
}
