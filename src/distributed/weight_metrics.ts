/** The workers' weight stage times (trajectories' `weightTimes`) as a step's metrics. */
import type { Trajectory } from "./protocol.ts";

/** Means of the workers' weight stage times over a step's trajectories (those that sent them). */
export function weightTimeMetrics(ts: Trajectory[]): Record<string, number> {
  const w = ts.flatMap((t) => t.weightTimes ? [t.weightTimes] : []);
  if (w.length === 0) return {};
  const mean = (f: (x: (typeof w)[number]) => number) => w.reduce((a, x) => a + f(x), 0) / w.length;
  return {
    "distributed/weights_fetch_s": mean((x) => x.fetchS),
    "distributed/weights_decode_s": mean((x) => x.decodeS),
    "distributed/weights_build_s": mean((x) => x.buildS),
    "distributed/weights_eager_frac": mean((x) => (x.eager ? 1 : 0)),
    "distributed/weights_wait_s/mean": mean((x) => x.waitS),
    "distributed/weights_wait_s/max": Math.max(...w.map((x) => x.waitS)),
  };
}
