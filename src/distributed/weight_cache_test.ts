import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectNats } from "./connect.ts";
import { runNames } from "./protocol.ts";
import { natsTestsEnabled, withServer } from "./test_server.ts";
import { WeightCache } from "./weight_cache.ts";
import { resetWeightStream, WeightPublisher } from "./weight_stream.ts";
import { halfToFloat } from "./weights.ts";

const tensors = (v: number) =>
  new Map([["w", Float32Array.from({ length: 50000 }, (_, i) => Math.cos(v + i))]]);

interface Fake {
  version: number;
  first: number;
  disposed: boolean;
}

if (await natsTestsEnabled()) {
  Deno.test("weight cache: versions are fetched before a job asks, two at most are held", async () => {
    const prefix = "webrl.test.cache";
    await withServer(prefix, async (s) => {
      const n = runNames(prefix);
      const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
      await resetWeightStream(await jetstreamManager(nc), n);
      const pub = new WeightPublisher(nc, n, 4, 65536);
      const wc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const built: Fake[] = [];
      const cache = new WeightCache<Fake>(wc, n, {
        build: (w) => {
          const m = {
            version: w.version,
            first: halfToFloat(w.tensors.get("w")!.subarray(0, 1))[0],
            disposed: false,
          };
          built.push(m);
          return m;
        },
        dispose: (m) => void (m.disposed = true),
        pollMs: 20,
      });
      const live = () => built.filter((m) => !m.disposed).map((m) => m.version);
      const until = async (what: string, ok: () => boolean) => {
        for (let t = 0; !ok(); t++) {
          if (t > 500) throw new Error(`timed out waiting for ${what}`);
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      await pub.publish({ version: 0, epoch: "e", modelConfig: "{}", tensors: tensors(0) });
      await until("v0 built", () => live().includes(0));
      // A job naming v0 finds it built: no fetch, no wait to speak of.
      const a = (await cache.acquire("e", 0))!;
      assert.equal(a.held.model.version, 0);
      assert.equal(a.held.times.eager, true);
      assert.ok(a.waitS < 0.05, `waited ${a.waitS} s`);
      // While that group runs, v1 and v2 come: the group's model stays, one more at most.
      await pub.publish({ version: 1, epoch: "e", modelConfig: "{}", tensors: tensors(1) });
      await until("v1 built", () => live().includes(1));
      await pub.publish({ version: 2, epoch: "e", modelConfig: "{}", tensors: tensors(2) });
      await until("v2 built", () => live().includes(2));
      assert.deepEqual(live(), [0, 2], "v1 gave way; v0 is in use");
      cache.release(a.held);
      // A job naming v1 again: fetched on demand, its own weights, still two held at most.
      const b = (await cache.acquire("e", 1))!;
      assert.equal(b.held.model.first, Math.f16round(Math.cos(1)));
      assert.equal(b.held.times.eager, false);
      assert.equal(live().length, 2);
      assert.ok(live().includes(1) && live().includes(2));
      cache.release(b.held);
      // A version its trainer has not announced yet (jobs leave while the weights are stored):
      // the group waits for it.
      const pending = cache.acquire("e", 3);
      await new Promise((r) => setTimeout(r, 100));
      await pub.publish({ version: 3, epoch: "e", modelConfig: "{}", tensors: tensors(3) });
      const c = (await pending)!;
      assert.equal(c.held.model.first, Math.f16round(Math.cos(3)));
      assert.ok(c.waitS >= 0.1, `waited ${c.waitS} s`);
      cache.release(c.held);
      // Another trainer process's number, or a purged version: null (the jobs are stale).
      assert.equal(await cache.acquire("other", 2), null);
      for (let v = 4; v <= 6; v++) {
        await pub.publish({ version: v, epoch: "e", modelConfig: "{}", tensors: tensors(v) });
      }
      const t0 = performance.now();
      assert.equal(await cache.acquire("e", 1), null, "v1 is purged (four versions kept)");
      assert.ok(performance.now() - t0 < 5000, "a purged version is not waited for");
      await cache.close();
      assert.deepEqual(live(), []);
      await wc.close();
      await nc.close();
    });
  });
}
