/**
 * One weight version's trip through a local nats-server: trainer f32 arrays (or, with `f16` as
 * the fourth argument, f16 bits as a GPU-side cast hands them over) in, worker f16 bits out.
 * Prints JSON lines: `pack` / `unpack` (f16 conversion + SHA-256 of every chunk, no network), then
 * `publish` (plan, chunks, manifest: WeightPublisher, with its `encode_s`) and `fetch` (read,
 * verify, store, after the publication: fetchWeights, with its `decode_s`), `trip` = publish +
 * fetch, and `overlapped`: the fetch started with the publication (a worker reading chunks while
 * they are stored), from the publication's start to the fetched weights. Seconds and MB/s of f16.
 *
 *   deno run -A bench/weights_transfer_bench.ts [params=100000000] [repeats=2] [chunk MiB=4] [f32|f16]
 */
import {
  connectNats,
  encodeWeights,
  fetchWeights,
  latestPlan,
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
const half = Deno.args[3] === "f16";
const tensors = new Map<string, Float32Array | Uint16Array>();
for (let left = params, i = 0; left > 0; i++) {
  const t = new Float32Array(Math.min(left, 136_000_000)); // the 0.5B shape's largest: the embedding
  for (let j = 0; j < t.length; j += 7) t[j] = Math.sin(j) * 0.05;
  const bits = half ? new Uint16Array(t.length) : null;
  if (bits) new Float16Array(bits.buffer).set(t);
  tensors.set(`t${i}`, bits ?? t);
  left -= t.length;
}
const MB = (2 * params) / 1e6;
const line = (stage: string, s: number, extra: Record<string, number> = {}) =>
  console.log(JSON.stringify({
    stage,
    params,
    input: half ? "f16" : "f32",
    s: +s.toFixed(3),
    mb_s: Math.round(MB / s),
    ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, +v.toFixed(3)])),
  }));
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
  const manifest = {
    version: 0,
    epoch: "",
    modelConfig: "{}",
    tensors: layout.tensors,
    bytes: layout.bytes,
    chunkBytes,
    chunkCount: chunks.length,
    chunks: shas.map((sha256, seq) => ({ seq, sha256 })),
  };
  const dec = new WeightsDecoder(manifest);
  for (const c of chunks) dec.add(c);
  await dec.finish(manifest);
  line("unpack", since(t));
}

if (!(await natsTestsEnabled())) Deno.exit(1);
await withNatsServer("bench.weights", async (s) => {
  const names = runNames("bench.weights");
  const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
  const wc = await connectNats(s.url, { nkeySeed: s.workerSeed });
  await resetWeightStream(await jetstreamManager(nc), names);
  const pub = new WeightPublisher(nc, names, 2, chunkBytes);
  const check = (got: Awaited<ReturnType<typeof fetchWeights>>) => {
    const bits = got?.weights.tensors.get("t0")?.[7];
    const want = new Uint16Array(new Float16Array([Math.sin(7) * 0.05]).buffer)[0];
    if (bits !== want) throw new Error("the fetched weights differ from the published ones");
  };
  for (let r = 0; r < repeats; r++) {
    await packAndUnpack();
    let t = performance.now();
    const v = 2 * r + 1;
    const times = await pub.publish({ version: v, modelConfig: "{}", tensors });
    const publish = since(t);
    line("publish", publish, { encode_s: times.encodeS });
    t = performance.now();
    const got = await fetchWeights(wc, names, v);
    const fetch = since(t);
    check(got);
    line("fetch", fetch, { decode_s: got!.decodeS });
    line("trip", publish + fetch);
    // A worker that starts reading as soon as the plan is stored.
    t = performance.now();
    const seen = (await latestPlan(wc, names, 0))!.seq;
    const publishing = pub.publish({ version: v + 1, modelConfig: "{}", tensors });
    let plan = null;
    while (!(plan = await latestPlan(wc, names, seen))) await new Promise((r) => setTimeout(r, 2));
    const overlapped = await fetchWeights(wc, names, v + 1, { plan });
    await publishing;
    check(overlapped);
    line("overlapped", since(t), { decode_s: overlapped!.decodeS });
  }
  await wc.close();
  await nc.close();
});
