import assert from "node:assert/strict";
import type { PagedSequence } from "../nn/mod.ts";
import { assertClose, gpuTest } from "../testing/mod.ts";
import { prefill, type PrefillRow, type PrefillTarget } from "./engine_prefill.ts";
import { enginePool } from "./engine_types.ts";
import { greedyOptions, tinyEngineModel } from "./test_engine.ts";

gpuTest(
  "engine prefill: a mixed batch's rows are read where its two passes left them, each as if alone",
  async () => {
    const model = tinyEngineModel();
    const cache = enginePool(model, greedyOptions({ numBlocks: 32 }));
    const input = { model, cache, kvDtype: "f32" as const };
    const V = model.config.vocabSize;
    const ids = (len: number, k: number) =>
      Int32Array.from({ length: len }, (_, i) => (k * 37 + i * 11 + 5) % V);
    const target = (t: Int32Array, cached = 0): PrefillTarget => {
      const seq: PagedSequence = { length: 0, blocks: [] };
      assert.ok(cache.reserve(seq, t.length + 1));
      return { ids: t, cache: seq, cached };
    };
    const head = ids(8, 1), long = Int32Array.from([...head, ...ids(3, 2)]);
    // `long`'s first 8 positions (two blocks of 4) come from the prefill of `head`.
    const first = target(head);
    prefill(input, [first]);
    const held: PagedSequence = { length: 0, blocks: [] };
    cache.share(held, first.cache.blocks.slice(0, 2));
    assert.ok(cache.reserve(held, long.length + 1));
    const mixed = [target(ids(5, 3)), { ids: long, cache: held, cached: 8 }, target(ids(6, 4))];
    const rows = prefill(input, mixed);
    // Two passes (the cached row's, the others'), each row read once from where it lies.
    assert.equal(new Set(rows.map((r) => r.logits)).size, 2);
    assert.deepEqual(rows.map((r) => r.row), [0, 0, 1]);
    assert.equal(rows[0].logits, rows[2].logits);
    const row = async (r: PrefillRow) =>
      Float32Array.from(await r.logits.toArray()).subarray(r.row * V, (r.row + 1) * V);
    for (const [i, t] of mixed.entries()) {
      const [alone] = prefill(input, [target(t.ids)]);
      assertClose(await row(rows[i]), await row(alone), {
        atol: 1e-4,
        rtol: 1e-4,
        label: `row ${i}`,
      });
    }
    cache.dispose();
    model.dispose();
  },
);
