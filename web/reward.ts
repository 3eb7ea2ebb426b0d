/**
 * The run's reward in the trainer worker: one of the project's built-in scorers, picked by name
 * (or dispatched on each row's data_source, as verl's default does), or the user's pasted
 * `compute_score` run in a sandboxed worker. Both go through the project's RewardManager, which
 * places scores, reports failures with their sample and counts them.
 */
import type { Tokenizer } from "../src/io/mod.ts";
import {
  arithmeticScore,
  type ComputeScore,
  defaultComputeScore,
  exactMatchScore,
  gsm8kScore,
  InProcessScorer,
  mathScore,
  RewardManager,
} from "../src/reward/mod.ts";
import { BrowserSandbox, stripExports } from "./reward_host.ts";
import { BUILTIN_REWARDS, type BuiltinReward, type RewardChoice } from "./settings.ts";

/** verl's signature over each built-in choice. */
const BUILTINS: Record<BuiltinReward, ComputeScore> = {
  auto: (ds, s, gt, extra) => defaultComputeScore(ds, s, gt, extra),
  arithmetic: (_ds, s, gt) => arithmeticScore(s, gt),
  gsm8k: (_ds, s, gt) => gsm8kScore(s, gt),
  math: (_ds, s, gt) => mathScore(s, gt),
  exact_match: (_ds, s, gt) => exactMatchScore(s, gt),
};

/**
 * For the page's explanation: the first of the usual answer shapes that `name` scores above 0 for
 * this ground truth (so the example shown is what the scorer really rewards), or null.
 */
export function rewardedAnswers(
  dataSource: string,
  groundTruth: string,
): Record<BuiltinReward, string | null> {
  const shapes = [`#### ${groundTruth}`, `\\boxed{${groundTruth}}`, groundTruth];
  const out = {} as Record<BuiltinReward, string | null>;
  for (const name of BUILTIN_REWARDS) {
    out[name] = shapes.find((s) => {
      try {
        return Number(BUILTINS[name](dataSource, s, groundTruth)) > 0;
      } catch {
        return false; // e.g. auto with a data_source that has no built-in scorer
      }
    }) ?? null;
  }
  return out;
}

/** The reward manager of a run; a custom function is loaded (and checked) in its sandbox. */
export async function rewardManager(
  choice: RewardChoice,
  options: { tokenizer: Tokenizer; print: (line: string) => void; sandboxUrl: URL },
): Promise<RewardManager> {
  const scorer = choice.kind === "builtin"
    ? new InProcessScorer(BUILTINS[choice.name])
    : await BrowserSandbox.load(choice.code, {
      timeoutS: choice.timeoutS,
      workerUrl: options.sandboxUrl,
    });
  return new RewardManager({ scorer, tokenizer: options.tokenizer, log: options.print });
}

/** A syntax error of pasted code, found without running it; null when it parses. */
export function rewardSyntaxError(code: string): string | null {
  try {
    new Function(stripExports(code));
    return null;
  } catch (e) {
    return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  }
}
