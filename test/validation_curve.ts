/**
 * The embedded task's learning runs for tests: the default config (configs/arithmetic_grpo.yaml)
 * from the shipped tiny checkpoint (assets/tiny_arith) with a fixed seed, shortened by overrides.
 */
import { initGpu } from "../src/gpu/mod.ts";
import { loadConfig } from "../src/config/mod.ts";
import { fit, setupTrainer, type TrainerParts } from "../src/trainer/mod.ts";
import type { Logger } from "../src/tracking/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

export interface CurveHooks {
  /** Every training step's metrics. */
  onStep?: (m: Record<string, number>) => void;
  /** The parts before training starts. */
  onParts?: (parts: TrainerParts) => void;
  /** The run's checkpoint folder after training, before it is removed. */
  afterFit?: (dir: string) => Promise<void> | void;
}

/** Runs the default config with `overrides`; returns the held-out accuracy at each validation. */
export async function validationCurve(
  overrides: string[],
  hooks: CurveHooks = {},
): Promise<number[]> {
  await initGpu();
  const dir = Deno.makeTempDirSync({ prefix: "webrl_learns_" });
  try {
    const cfg = loadConfig("ppo_trainer", {
      files: [`${ROOT}configs/arithmetic_grpo.yaml`],
      overrides: [
        `data.train_files=${ROOT}data/arithmetic/train.parquet`,
        `data.val_files=${ROOT}data/arithmetic/val.parquet`,
        `actor_rollout_ref.model.path=${ROOT}assets/tiny_arith`,
        "trainer.seed=1",
        "trainer.logger=[]",
        "trainer.log_val_generations=0",
        `trainer.default_local_dir=${dir}`,
        ...overrides,
      ],
    });
    const parts = await setupTrainer(cfg, { print: () => {} });
    hooks.onParts?.(parts);
    const val: number[] = [];
    const sink: Logger = {
      log: (_s, m) => {
        const k = Object.keys(m).find((k) => k.startsWith("val-core/"));
        if (k) val.push(m[k]);
        if ("timing_s/step" in m) hooks.onStep?.(m);
      },
      close() {},
    };
    parts.tracking = sink;
    await fit(parts);
    await hooks.afterFit?.(dir);
    return val;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}
