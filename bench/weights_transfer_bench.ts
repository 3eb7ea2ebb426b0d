/**
 * One weight version's trip through a local nats-server: trainer f32 arrays in, worker f32 arrays
 * out. Prints JSON lines: `pack` / `unpack` (f16 conversion + SHA-256 of every chunk, no network),
 * then `publish` (pack and store, pipelined: WeightPublisher) and `fetch` (read, verify, unpack,
 * pipelined: fetchWeights), each with seconds and MB/s of f16 data, and `trip` = publish + fetch.
 *
 *   deno run -A bench/weights_transfer_bench.ts [params=100000000] [repeats=2] [chunk MiB=4]
 */
import {
  connectNats,
  encodeWeights,
  fetchWeights,
  natsTestsEnabled,
  resetWeightStream,
  runNames,
  sha256Hex,
  WeightPublisher,
  WeightsDecoder,
  withNatsServer,
} from "../src/distributed/mod.ts";
import { jetstreamManager } from "@nats-io/jetstream";

const params = Number(Deno.args[0] ?? 100_000_000);
const repeats = Number(Deno.args[1] ?? 2);
const chunkBytes = Number(Deno.args[2] ?? 4) << 20;
const tensors = new Map<string, Float32Array>();
for (let left = params, i = 0; left > 0; i++) {
  const t = new Float32Array(Math.min(left, 136_000_000)); // the 0.5B shape's largest: the embedding
  for (let j = 0; j < t.length; j += 7) t[j] = Math.sin(j) * 0.05;
  tensors.set(`t${i}`, t);
  left -= t.length;
}
const MB = (2 * params) / 1e6;
const line = (stage: string, s: number) =>
  console.log(JSON.stringify({ stage, params, s: +s.toFixed(3), mb_s: Math.round(MB / s) }));
const since = (t: number) => (performance.now() - t) / 1000;

/** The conversions and digests alone, without the network (their memory is dropped after). */
async function packAndUnpack(): Promise<void> {
  let t = performance.now();
  const chunks: Uint8Array[] = [], digests: Promise<string>[] = [];
  const layout = await encodeWeights(tensors, chunkBytes, (_, b) => {
    chunks.push(b);
    digests.push(sha256Hex(b));
  });
  const shas = await Promise.all(digests);
  line("pack", since(t));
  t = performance.now();
  const dec = new WeightsDecoder({
    version: 0,
    modelConfig: "{}",
    ...layout,
    chunkBytes,
    chunks: shas.map((sha256, seq) => ({ seq, sha256 })),
  });
  for (const c of chunks) dec.add(c);
  await dec.finish();
  line("unpack", since(t));
}

if (!(await natsTestsEnabled())) Deno.exit(1);
await withNatsServer("bench.weights", async (s) => {
  const names = runNames("bench.weights");
  const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
  const wc = await connectNats(s.url, { nkeySeed: s.workerSeed });
  await resetWeightStream(await jetstreamManager(nc), names);
  const pub = new WeightPublisher(nc, names, 2, chunkBytes);
  for (let r = 0; r < repeats; r++) {
    await packAndUnpack();
    let t = performance.now();
    await pub.publish({ version: r + 1, modelConfig: "{}", tensors });
    const publish = since(t);
    line("publish", publish);
    t = performance.now();
    const got = await fetchWeights(wc, names, r + 1);
    const fetch = since(t);
    if (got?.tensors.get("t0")?.[7] !== Math.f16round(Math.sin(7) * 0.05)) {
      throw new Error("the fetched weights differ from the published ones");
    }
    line("fetch", fetch);
    line("trip", publish + fetch);
  }
  await wc.close();
  await nc.close();
});
