import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connectNats } from "./connect.ts";
import { ChecksumError, runNames, sha256Hex } from "./protocol.ts";
import { natsTestsEnabled, withServer } from "./test_server.ts";
import { fetchWeights, latestPlan, resetWeightStream, WeightPublisher } from "./weight_stream.ts";
import {
  encodeWeights,
  halfToFloat,
  weightChunkBytes,
  WeightsDecoder,
  type WeightsManifest,
} from "./weights.ts";

function tensors(seed: number): Map<string, Float32Array> {
  const m = new Map<string, Float32Array>();
  // Lengths that straddle chunk borders (chunks of 64 KiB = 32,768 halves).
  for (const [name, n] of [["a", 40000], ["b", 3], ["c", 70001]] as const) {
    m.set(name, Float32Array.from({ length: n }, (_, i) => Math.sin(seed + i) * 2));
  }
  return m;
}

const f16 = (x: number) => Math.f16round(x);
const asFloat = (bits: Uint16Array | undefined) => bits && halfToFloat(bits);

Deno.test("weights: chunks round-trip as f16; a changed byte is a ChecksumError", async () => {
  const w = tensors(1), chunks: Uint8Array[] = [];
  const layout = await encodeWeights(w, 65536, (i, b) => {
    assert.equal(i, chunks.length);
    chunks.push(b.slice());
  });
  assert.equal(layout.bytes, 2 * 110004);
  assert.equal(chunks.length, 4);
  const manifest: WeightsManifest = {
    version: 3,
    epoch: "e",
    modelConfig: "{}",
    tensors: layout.tensors,
    bytes: layout.bytes,
    chunkBytes: 65536,
    chunkCount: 4,
    chunks: await Promise.all(chunks.map(async (c, seq) => ({ seq, sha256: await sha256Hex(c) }))),
  };
  const dec = new WeightsDecoder(manifest);
  for (const c of chunks) dec.add(c);
  const back = await dec.finish(manifest);
  for (const [name, t] of w) {
    assert.deepEqual(asFloat(back.tensors.get(name)), t.map(f16), name);
  }
  // f16 bits in: the same bytes out, no conversion.
  const again: Uint8Array[] = [];
  await encodeWeights(back.tensors, 65536, (_, b) => void again.push(b.slice()));
  assert.deepEqual(again, chunks);
  chunks[2][100] ^= 1;
  const bad = new WeightsDecoder(manifest);
  for (const c of chunks) bad.add(c);
  await assert.rejects(
    bad.finish(manifest),
    (e) => e instanceof ChecksumError && /chunk 2/.test(e.message),
  );
  assert.equal(weightChunkBytes(8 << 20), 4 << 20);
  assert.equal(weightChunkBytes(1048576), 1 << 20);
  assert.equal(weightChunkBytes(1000000), 15 * 65536);
});

if (await natsTestsEnabled()) {
  Deno.test("weights: a worker fetches the kept versions; a corrupted chunk is refused", async () => {
    const prefix = "webrl.test.weights";
    await withServer(prefix, async (s) => {
      const n = runNames(prefix);
      const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
      await resetWeightStream(await jetstreamManager(nc), n);
      const pub = new WeightPublisher(nc, n, 2, 65536);
      for (const v of [0, 1, 2]) {
        await pub.publish({ version: v, modelConfig: "{}", tensors: tensors(v) });
      }
      const wc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      assert.equal(await fetchWeights(wc, n, 0), null, "v0 is purged (keep 2)");
      const v2 = await fetchWeights(wc, n, 2);
      assert.deepEqual(asFloat(v2?.weights.tensors.get("c")), tensors(2).get("c")!.map(f16));
      assert.equal((await latestPlan(wc, n, 0))?.plan.version, 2);
      // A worker may read weights but not write or purge them.
      await assert.rejects(
        jetstream(wc).publish(`${n.weights}.9.head`, new Uint8Array(1)),
        /permission/i,
      );
      const wjsm = await jetstreamManager(wc, { checkAPI: false });
      await assert.rejects(wjsm.streams.purge(n.weightStream), /permission/i);
      // Nor another run's weights.
      const other = runNames("webrl.other.run");
      await assert.rejects(
        wjsm.direct.getMessage(other.weightStream, { last_by_subj: `${other.weights}.1.head` }),
        /permission|timeout/i,
      );
      // A chunk stored with other bytes than the manifest's digest says (a corrupted store).
      const js = jetstream(nc);
      const seq = (await js.publish(`${n.weights}.1.data`, new Uint8Array(65536))).seq;
      const head = await (await jetstreamManager(nc)).direct.getMessage(n.weightStream, {
        last_by_subj: `${n.weights}.1.head`,
      });
      const text = new TextDecoder().decode(head!.data);
      const manifest = JSON.parse(text.slice(text.indexOf("\n") + 1));
      manifest.chunks[0].seq = seq;
      const body = new TextEncoder().encode(JSON.stringify(manifest));
      const framed = new TextEncoder().encode(
        `${await sha256Hex(body)}\n${JSON.stringify(manifest)}`,
      );
      await js.publish(`${n.weights}.1.head`, framed);
      await assert.rejects(fetchWeights(wc, n, 1), ChecksumError);
      await wc.close();
      await nc.close();
    });
  });

  Deno.test("weights: a fetch reads chunks while they are stored; a corrupted one is refused", async () => {
    const prefix = "webrl.test.stream";
    await withServer(prefix, async (s) => {
      const n = runNames(prefix);
      const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
      await resetWeightStream(await jetstreamManager(nc), n);
      const wc = await connectNats(s.url, { nkeySeed: s.workerSeed });
      const js = jetstream(nc), w = tensors(5);
      // A publication by hand, chunk by chunk with pauses: the plan, then the chunks, then the
      // manifest; the worker's fetch starts after the plan and gets chunks as they land.
      const by = async (version: number, corrupt: number | null) => {
        const chunks: Uint8Array[] = [];
        const layout = await encodeWeights(w, 65536, (_, b) => void chunks.push(b.slice()));
        const plan = {
          version,
          epoch: "e1",
          modelConfig: "{}",
          tensors: layout.tensors,
          bytes: layout.bytes,
          chunkBytes: 65536,
          chunkCount: chunks.length,
        };
        const framed = async (x: unknown) => {
          const body = JSON.stringify(x);
          return new TextEncoder().encode(
            `${await sha256Hex(new TextEncoder().encode(body))}\n${body}`,
          );
        };
        await js.publish(`${n.weights}.${version}.plan`, await framed(plan));
        const fetching = fetchWeights(wc, n, version);
        const got: { seq: number; sha256: string }[] = [];
        for (const [i, c] of chunks.entries()) {
          await new Promise((r) => setTimeout(r, 30));
          const sent = c.slice();
          if (i === corrupt) sent[7] ^= 0x40; // stored bytes differ from what the digest says
          got.push({
            seq: (await js.publish(`${n.weights}.${version}.data`, sent)).seq,
            sha256: await sha256Hex(c),
          });
          // Another version's message in between: the fetch skips it.
          if (i === 1) await js.publish(`${n.weights}.99.data`, new Uint8Array(8));
        }
        await js.publish(`${n.weights}.${version}.head`, await framed({ ...plan, chunks: got }));
        return fetching;
      };
      const ok = await by(1, null);
      assert.ok(ok && ok.fetchS > 0.1, "the fetch waited for the chunks being stored");
      assert.equal(ok.weights.epoch, "e1");
      for (const [name, t] of w) {
        assert.deepEqual(asFloat(ok.weights.tensors.get(name)), t.map(f16));
      }
      await assert.rejects(
        by(2, 2),
        (e) => e instanceof ChecksumError && /chunk 2/.test(e.message),
      );
      await wc.close();
      await nc.close();
    });
  });
}
