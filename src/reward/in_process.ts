/** Scores in the calling thread; for the built-in scorers, which are trusted and fast. */
import type { BatchScorer, ComputeScore, ScoreOutcome, ScoreRequest } from "./types.ts";

export class InProcessScorer implements BatchScorer {
  constructor(
    readonly fn: ComputeScore,
    readonly rewardKwargs: Record<string, unknown> = {},
  ) {}

  async scoreBatch(samples: ScoreRequest[]): Promise<ScoreOutcome[]> {
    const out: ScoreOutcome[] = [];
    for (const s of samples) {
      try {
        const value = await this.fn(
          s.dataSource,
          s.solution,
          s.groundTruth,
          s.extraInfo,
          this.rewardKwargs,
        );
        out.push({ ok: true, value });
      } catch (e) {
        out.push({ ok: false, kind: "error", message: e instanceof Error ? e.message : String(e) });
      }
    }
    return out;
  }

  close(): void {}
}
