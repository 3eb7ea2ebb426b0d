/**
 * verl's deprecated global micro-batch keys (`ppo_micro_batch_size`, `log_prob_micro_batch_size`,
 * `forward_micro_batch_size`), which older command lines (TinyZero, Search-R1) still pass. verl
 * divides them by the GPU count into the `*_per_gpu` keys; on one GPU they are those keys. Setting
 * both of a pair is an error, as in verl.
 */
import { ConfigError } from "./errors.ts";
import { getDotted, setDotted } from "./overrides.ts";
import { Field, type Fields, int, isRef, lookup, type Section } from "./schema.ts";

/** What a per-GPU micro-batch key's doc says of null. */
export const NULL_MICRO =
  " null (verl's default) only with use_dynamic_bsz, whose token budget then sizes the passes.";

/** The schema field of a legacy key (null: not set). */
export function legacyMicroBatch(perGpu: string) {
  return int(
    null,
    `verl's deprecated global size: on one GPU the same as ${perGpu}, which it sets.`,
    { min: 1 },
  );
}

/** Legacy key -> its per-GPU key, under a section. */
export const LEGACY_MICRO_KEYS: readonly [string, string][] = [
  ["actor_rollout_ref.actor.ppo_micro_batch_size", "ppo_micro_batch_size_per_gpu"],
  ["actor_rollout_ref.rollout.log_prob_micro_batch_size", "log_prob_micro_batch_size_per_gpu"],
  ["actor_rollout_ref.ref.log_prob_micro_batch_size", "log_prob_micro_batch_size_per_gpu"],
  ["critic.ppo_micro_batch_size", "ppo_micro_batch_size_per_gpu"],
  ["critic.forward_micro_batch_size", "forward_micro_batch_size_per_gpu"],
];

/**
 * Moves each legacy key that is set onto its per-GPU key; both set (to differing values) fail.
 * A per-GPU key that took its default from another (`${...}`) follows that key's new value.
 */
export function applyLegacyMicroBatches(cfg: object, root: Section<Fields>): void {
  const tree = cfg as Record<string, unknown>;
  const before = structuredClone(tree);
  const perGpuOf = (legacy: string, name: string) =>
    `${legacy.slice(0, legacy.lastIndexOf("."))}.${name}`;
  const refOf = (key: string) => {
    const field = lookup(root, key);
    const def = field instanceof Field ? field.spec.default : undefined;
    return isRef(def) ? def.ref : null;
  };
  // Was `key` left at its default (its ref's value, or its literal default) before the moves?
  const defaulted = (key: string) => {
    const r = refOf(key);
    const field = lookup(root, key) as Field<unknown>;
    const def = r ? getDotted(before, r) : field.spec.default;
    return getDotted(before, key) === def;
  };
  const moved = new Set<string>();
  for (const [legacy, name] of LEGACY_MICRO_KEYS) {
    const value = getDotted(tree, legacy);
    if (value === null || value === undefined) continue;
    const perGpu = perGpuOf(legacy, name);
    const current = getDotted(tree, perGpu);
    if (!defaulted(perGpu) && current !== value) {
      throw new ConfigError(
        legacy,
        `${legacy}=${value} and ${perGpu}=${current} are both set; set one (on one GPU they ` +
          "are the same size)",
      );
    }
    setDotted(tree, perGpu, value);
    moved.add(perGpu);
  }
  // In order (targets come first in LEGACY_MICRO_KEYS): defaults follow their moved targets.
  for (const [legacy, name] of LEGACY_MICRO_KEYS) {
    const perGpu = perGpuOf(legacy, name);
    const r = refOf(perGpu);
    if (
      !moved.has(perGpu) && r && defaulted(perGpu) && getDotted(tree, r) !== getDotted(before, r)
    ) {
      setDotted(tree, perGpu, getDotted(tree, r));
      moved.add(perGpu);
    }
  }
}

/**
 * The SFT config's older verl spellings: data.micro_batch_size (global, deprecated) sets
 * micro_batch_size_per_gpu; optim.lr_warmup_steps_ratio (verl's newer name) wins over
 * warmup_steps_ratio.
 */
export function normalizeSft(
  cfg: {
    data: { micro_batch_size: number | null; micro_batch_size_per_gpu: number };
    optim: { lr_warmup_steps_ratio: number | null; warmup_steps_ratio: number };
  },
  root: Section<Fields>,
): void {
  const d = cfg.data;
  if (d.micro_batch_size !== null) {
    const def = (lookup(root, "data.micro_batch_size_per_gpu") as Field<number>).spec.default;
    const perGpu = d.micro_batch_size_per_gpu;
    if (perGpu !== def && perGpu !== d.micro_batch_size) {
      throw new ConfigError(
        "data.micro_batch_size",
        `data.micro_batch_size=${d.micro_batch_size} and data.micro_batch_size_per_gpu=` +
          `${d.micro_batch_size_per_gpu} are both set; set one (on one GPU they are the same)`,
      );
    }
    d.micro_batch_size_per_gpu = d.micro_batch_size;
  }
  if (cfg.optim.lr_warmup_steps_ratio !== null) {
    cfg.optim.warmup_steps_ratio = cfg.optim.lr_warmup_steps_ratio;
  }
}
