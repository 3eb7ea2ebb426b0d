/** Writes configs/{ppo_trainer,generation,sft_trainer}.yaml from the schemas. */
import { SCHEMAS } from "./registry.ts";
import { schemaToYaml } from "./yaml_io.ts";

/** The config files generated from schemas, relative to the repository root. */
export const GENERATED_FILES = {
  "configs/ppo_trainer.yaml": SCHEMAS.ppo_trainer,
  "configs/generation.yaml": SCHEMAS.generation,
  "configs/sft_trainer.yaml": SCHEMAS.sft_trainer,
} as const;

if (import.meta.main) {
  const root = new URL("../../", import.meta.url);
  await Deno.mkdir(new URL("configs/", root), { recursive: true });
  for (const [rel, schema] of Object.entries(GENERATED_FILES)) {
    const path = new URL(rel, root);
    const tmp = new URL(`${rel}.tmp-${Deno.pid}`, root);
    await Deno.writeTextFile(tmp, schemaToYaml(schema));
    await Deno.rename(tmp, path);
    console.log(`wrote ${rel}`);
  }
}
