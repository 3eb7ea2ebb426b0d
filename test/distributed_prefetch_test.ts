/**
 * The next step's jobs leave before the update, even while their weights version is still being
 * stored: an update records its GPU work synchronously for seconds, so jobs left to the
 * background would reach the workers only when it yields (on two H100s they waited out the whole
 * update every other step, when the version's upload had not finished before the update began).
 */
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { initGpu } from "../src/gpu/mod.ts";
import { connectNats, natsTestsEnabled, runNames, withNatsServer } from "../src/distributed/mod.ts";
import { tinyNatsTrainer } from "./tiny_run.ts";

const enabled = await natsTestsEnabled();

Deno.test({
  name:
    "distributed: prefetch returns once the next jobs are stored, their version's upload or not",
  ignore: !enabled,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await initGpu();
    const prefix = "prefetch";
    await withNatsServer(prefix, async (s) => {
      const { parts, dir } = await tinyNatsTrainer(s, prefix, ["distributed.max_staleness=1"]);
      const remote = parts.remote!;
      const names = runNames(prefix);
      const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
      try {
        const jsm = await jetstreamManager(nc);
        const prompts = parts.config.data.train_batch_size;
        const stored = async () => (await jsm.streams.info(names.jobStream)).state.messages;
        // The run's first version is uploaded before any job names it.
        await remote.publish(parts, 0);
        await remote.prefetch(parts, 1);
        assert.equal(await stored(), prompts, "the step-2 jobs are stored when prefetch returns");
        // A later version: prefetch does not wait for its upload, only for its jobs.
        await remote.publish(parts, 1);
        await remote.prefetch(parts, 2);
        assert.equal(await stored(), 2 * prompts, "the step-3 jobs are stored at once");
        await remote.published();
      } finally {
        await nc.close();
        await remote.close();
        Deno.removeSync(dir, { recursive: true });
      }
    });
  },
});
