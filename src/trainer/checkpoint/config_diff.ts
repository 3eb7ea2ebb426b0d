/**
 * A resumed run compares its config with the one saved in the checkpoint, key by key. Keys that
 * change the model, tensor shapes or the order of the data make the saved state meaningless for
 * the new run: they are an error unless listed in `trainer.resume_allowed_changes`. Other
 * differences (learning rate, logging, run length, ...) are printed as warnings.
 */
import { parse } from "yaml";

/**
 * Keys (or key prefixes) whose change is an error on resume, with the reason printed beside them:
 * the PPO trainer's, the data keys both trainers share, then the SFT trainer's.
 */
export const RESUME_HARD_KEYS: Record<string, string> = {
  "actor_rollout_ref.model.path": "another model",
  "actor_rollout_ref.model.dtype": "another parameter dtype",
  "actor_rollout_ref.model.lora_rank": "other trainable weights",
  "actor_rollout_ref.model.lora_alpha": "other trainable weights",
  "actor_rollout_ref.model.target_modules": "other trainable weights",
  "actor_rollout_ref.model.exclude_modules": "other trainable weights",
  "critic.model.lora_rank": "other trainable critic weights",
  "critic.model.lora_alpha": "other trainable critic weights",
  "critic.model.target_modules": "other trainable critic weights",
  "critic.model.exclude_modules": "other trainable critic weights",
  "actor_rollout_ref.model.override_config": "another architecture",
  "critic.model.path": "another critic model",
  "critic.enable": "a critic appears or disappears",
  "algorithm.adv_estimator": "another estimator (and critic)",
  "algorithm.kl_ctrl.type": "another KL controller state",
  "actor_rollout_ref.rollout.n": "other group shapes",
  "actor_rollout_ref.rollout.prompt_length": "other shapes",
  "actor_rollout_ref.rollout.response_length": "other shapes",
  "actor_rollout_ref.actor.ppo_mini_batch_size": "other optimizer steps per batch",
  "critic.ppo_mini_batch_size": "other optimizer steps per batch",
  "data.train_files": "other data",
  "data.train_max_samples": "other data",
  "data.train_batch_size": "another data order",
  "data.shuffle": "another data order",
  "data.seed": "another data order",
  "data.max_prompt_length": "other shapes and prompts",
  "data.max_response_length": "other shapes",
  "data.prompt_key": "other prompts",
  "data.tokenizer": "other token ids",
  "data.apply_chat_template_kwargs": "other prompts",
  "actor_rollout_ref.model.custom_chat_template": "other prompts",
  "data.truncation": "other prompts",
  "data.filter_overlong_prompts": "other prompts",
  "trainer.seed": "other samples and shuffles",
  "model.partial_pretrain": "another model",
  "model.lora_rank": "other trainable weights",
  "model.lora_alpha": "other trainable weights",
  "model.target_modules": "other trainable weights",
  "model.exclude_modules": "other trainable weights",
  "data.max_length": "other examples",
  "data.response_key": "other examples",
  "data.prompt_dict_keys": "other examples",
  "data.response_dict_keys": "other examples",
  "data.multiturn": "other examples",
};

/** Keys never compared: they say where to resume from, not what the run is. */
const IGNORED = new Set([
  "trainer.resume_mode",
  "trainer.resume_from_path",
  "trainer.resume_allowed_changes",
  "trainer.default_local_dir",
]);

export interface ConfigChange {
  key: string;
  saved: string;
  now: string;
  /** Why the change is refused (a hard key), or null for a warning. */
  hard: string | null;
}

function flatten(v: unknown, prefix: string, out: Map<string, string>): void {
  if (typeof v === "object" && v !== null && !Array.isArray(v)) {
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length && prefix) out.set(prefix, "{}");
    for (const [k, child] of entries) flatten(child, prefix ? `${prefix}.${k}` : k, out);
  } else out.set(prefix, JSON.stringify(v ?? null));
}

function flatYaml(text: string): Map<string, string> {
  const out = new Map<string, string>();
  flatten(parse(text), "", out);
  return out;
}

function matches(key: string, prefixes: Iterable<string>): string | undefined {
  for (const p of prefixes) if (key === p || key.startsWith(`${p}.`)) return p;
  return undefined;
}

/** Every key whose value differs between two resolved configs (YAML texts), sorted. */
export function diffConfigs(savedYaml: string, nowYaml: string): ConfigChange[] {
  const saved = flatYaml(savedYaml), now = flatYaml(nowYaml);
  const keys = [...new Set([...saved.keys(), ...now.keys()])].sort();
  const out: ConfigChange[] = [];
  for (const key of keys) {
    if (IGNORED.has(key)) continue;
    const a = saved.get(key) ?? "(absent)", b = now.get(key) ?? "(absent)";
    if (a === b) continue;
    const hardKey = matches(key, Object.keys(RESUME_HARD_KEYS));
    out.push({ key, saved: a, now: b, hard: hardKey ? RESUME_HARD_KEYS[hardKey] : null });
  }
  return out;
}

/**
 * Prints the differences and throws when a hard key changed without being allowed. `where` names
 * the checkpoint; `allowed` is trainer.resume_allowed_changes.
 */
export function checkResumeConfig(
  changes: ConfigChange[],
  o: { where: string; allowed: string[]; print: (line: string) => void },
): void {
  if (!changes.length) return;
  const refused = changes.filter((c) => c.hard && !matches(c.key, o.allowed));
  o.print(`the config differs from the one saved with ${o.where}:`);
  for (const c of changes) {
    const tag = !c.hard ? "warning" : refused.includes(c) ? "error" : "allowed";
    o.print(`  ${tag}: ${c.key}: ${c.saved} -> ${c.now}${c.hard ? ` (${c.hard})` : ""}`);
  }
  if (!refused.length) return;
  const keys = [...new Set([...o.allowed, ...refused.map((c) => c.key)])];
  throw new Error(
    `resuming from ${o.where} with ${refused.map((c) => c.key).join(", ")} changed would ` +
      "continue the saved run's state under another model, shapes or data order. Restore the " +
      `saved value(s), start a fresh run (trainer.resume_mode=disable or another ` +
      `trainer.default_local_dir), or resume anyway with trainer.resume_allowed_changes=[${
        keys.join(",")
      }]`,
  );
}
