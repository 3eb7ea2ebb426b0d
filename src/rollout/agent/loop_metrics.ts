/**
 * The agent loop's metrics for a batch: verl's `num_turns/{mean,max,min}` and
 * `timing_s/agent_loop/{generate_sequences,tool_calls}/{mean,max,min}`, the tools' counts,
 * errors and latencies (calls.ts), and the interactions': user replies per conversation, turn
 * scores, how many conversations the interaction ended, failed calls and latency.
 */
import type { ToolStats } from "./calls.ts";
import type { InteractionStats } from "./turn.ts";

/** What the metrics read of a trajectory (loop.ts's Trajectory). */
interface Finished {
  numTurns: number;
  turnScores: number[];
  seconds: { generate: number; tools: number };
  interaction?: { turns: number; terminated: boolean };
}

function summary(prefix: string, xs: number[]): Record<string, number> {
  if (xs.length === 0) return {};
  return {
    [`${prefix}/mean`]: xs.reduce((a, b) => a + b, 0) / xs.length,
    [`${prefix}/max`]: Math.max(...xs),
    [`${prefix}/min`]: Math.min(...xs),
  };
}

export function loopMetrics(
  trajectories: Finished[],
  stats: { stats: ToolStats; interactionStats: InteractionStats },
): Record<string, number> {
  const m: Record<string, number> = {
    ...summary("num_turns", trajectories.map((t) => t.numTurns)),
    // verl's per-sample agent loop timing (here the engine's turns are batched: a sample's
    // generate time is that of the turns it took part in).
    ...summary(
      "timing_s/agent_loop/generate_sequences",
      trajectories.map((t) => t.seconds.generate),
    ),
    ...summary("timing_s/agent_loop/tool_calls", trajectories.map((t) => t.seconds.tools)),
    ...stats.stats.metrics(),
  };
  const withInteraction = trajectories.filter((t) => t.interaction);
  const is = stats.interactionStats;
  if (withInteraction.length === 0 && is.errors === 0) return m;
  Object.assign(
    m,
    summary("interaction/user_turns", withInteraction.map((t) => t.interaction!.turns)),
  );
  const scores = withInteraction.flatMap((t) => t.turnScores);
  if (scores.length) Object.assign(m, summary("interaction/turn_score", scores));
  m["interaction/terminated"] = withInteraction.filter((t) => t.interaction!.terminated).length /
    Math.max(1, withInteraction.length);
  m["interaction/errors"] = is.errors;
  if (is.latency.length) {
    m["interaction/latency_s/mean"] = is.latency.reduce((a, b) => a + b, 0) / is.latency.length;
    m["interaction/latency_s/max"] = Math.max(...is.latency);
  }
  return m;
}
