/**
 * The next step's jobs leave before the update when their weights version is already stored: an
 * update records its GPU work synchronously for seconds, so jobs left to the background would
 * reach the workers only when it yields (on two H100s they waited out the whole update).
 */
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { initGpu } from "../src/gpu/mod.ts";
import { connectNats, natsTestsEnabled, runNames, withNatsServer } from "../src/distributed/mod.ts";
import { tinyNatsTrainer } from "./tiny_run.ts";

const enabled = await natsTestsEnabled();

Deno.test({
  name: "distributed: prefetch returns once the next jobs are stored when their version is",
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
        await remote.publish(parts, 0);
        await remote.published(); // version 0 is stored: its jobs may go out at once
        const before = (await jsm.streams.info(names.jobStream)).state.messages;
        await remote.prefetch(parts, 1);
        // no await in between: the jobs must be stored by the time prefetch resolved
        const after = (await jsm.streams.info(names.jobStream)).state.messages;
        const prompts = parts.config.data.train_batch_size;
        assert.equal(after - before, prompts, "the step-2 jobs are stored when prefetch returns");
      } finally {
        await nc.close();
        await remote.close();
        Deno.removeSync(dir, { recursive: true });
      }
    });
  },
});
