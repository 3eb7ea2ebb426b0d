/** values: the critic's values of every response position, when a critic runs. */
import type { RefBatch, ValuedBatch } from "../batch.ts";
import { computeValues } from "../critic.ts";
import type { TrainerParts } from "../parts.ts";
import { microBatching } from "../util.ts";

export async function values(parts: TrainerParts, batch: RefBatch): Promise<ValuedBatch> {
  if (!parts.critic) return { ...batch, values: undefined };
  const v = await computeValues(parts.critic.model, batch, microBatching(parts.config, "values"));
  return { ...batch, values: v };
}
