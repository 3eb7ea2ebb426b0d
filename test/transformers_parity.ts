/**
 * The Deno side of the transformers round trip (see test/transformers_parity.py for the whole
 * procedure): writes one model folder per family and RoPE variant (tiny seeded weights, our
 * writer, the character tokenizer, a generation_config.json), reads each back, and records in
 * `expected.json` what transformers must reproduce: the token ids of a few strings, the rendered
 * chat template, and for fixed token ids our GPU model's next-token log-probs and greedy
 * continuation (with the CPU reference's log-prob error beside them).
 *
 *   deno run -A test/transformers_parity.ts [out_dir]      (default outputs/transformers_parity)
 */
import { initGpu } from "../src/gpu/mod.ts";
import {
  charTokenizer,
  charTokenizerTexts,
  floatTensor,
  parseModelConfig,
  readModelFolder,
  tensorToFloat32,
  type TorchFloatDtype,
  writeModelFolder,
} from "../src/io/mod.ts";
import {
  CausalLM,
  positionIdsFromMask,
  refLogits,
  TINY_FAMILIES,
  tinyWeights,
  weightShapes,
} from "../src/nn/mod.ts";
import { noGrad, scope, Tensor } from "../src/tensor/mod.ts";

/** Strings whose ids transformers' tokenizer must reproduce (spaces, newlines, unknowns). */
export const PARITY_STRINGS = [
  "#### 6",
  "12+7=19",
  "  two  spaces ",
  "a\nb\n\nc\n",
  "what is (3*4)-5?\n#### 7",
  "<|user|>1+1=<eos><|assistant|>2",
  "Tab\there, caps and \u00e9", // outside the alphabet: one <unk> per byte
];

const CHAT = [{ role: "system", content: "add" }, { role: "user", content: "what is 12+7?" }];
const GREEDY_TOKENS = 8;
const GENERATION = '{\n  "do_sample": false,\n  "eos_token_id": 1,\n  "pad_token_id": 0\n}\n';

/** Folder names: the family label in letters, digits, '.', '_' and '-' only. */
const slug = (name: string) => name.replace(/[^a-z0-9.]+/gi, "_").replace(/^_|_$/g, "");

function logSoftmaxAt(row: ArrayLike<number>, id: number): number {
  let max = -Infinity, sum = 0;
  for (let v = 0; v < row.length; v++) max = Math.max(max, row[v]);
  for (let v = 0; v < row.length; v++) sum += Math.exp(row[v] - max);
  return row[id] - max - Math.log(sum);
}

function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let v = 1; v < row.length; v++) if (row[v] > row[best]) best = v;
  return best;
}

/** Next-token log-probs [T-1] of one unpadded sequence, from our GPU model and the reference. */
async function scoreSequence(model: CausalLM, weights: Map<string, Float32Array>, ids: number[]) {
  const T = ids.length, V = model.config.vocabSize;
  const mask = new Int32Array(T).fill(1);
  const logits = await scope(() =>
    noGrad(() =>
      model.forward(Tensor.from(ids, [1, T], "i32"), {
        positionIds: Tensor.from(positionIdsFromMask(mask, 1, T), [1, T], "i32"),
        attentionMask: Tensor.from(mask, [1, T], "i32"),
      })
    )
  ).toArray();
  const ref = refLogits(model.config, weights, {
    inputIds: Int32Array.from(ids),
    batch: 1,
    seqLen: T,
  });
  const ours: number[] = [], refErr: number[] = [];
  for (let t = 0; t + 1 < T; t++) {
    const lp = logSoftmaxAt(logits.subarray(t * V, (t + 1) * V), ids[t + 1]);
    ours.push(lp);
    refErr.push(Math.abs(lp - logSoftmaxAt(ref.subarray(t * V, (t + 1) * V), ids[t + 1])));
  }
  return { logprobs: ours, refMaxAbsErr: Math.max(...refErr) };
}

/** Greedy continuation through the KV cache (prefill, then one decode step per token). */
async function greedy(model: CausalLM, ids: number[], steps: number): Promise<number[]> {
  const P = ids.length;
  const mask = new Int32Array(P).fill(1);
  const cache = model.createCache(1, P + steps, mask);
  const out: number[] = [];
  let logits = await model.prefill(cache, Tensor.from(ids, [1, P], "i32"), {
    positionIds: Tensor.from(positionIdsFromMask(mask, 1, P), [1, P], "i32"),
    attentionMask: Tensor.from(mask, [1, P], "i32"),
  }).toArray();
  for (let s = 0; s < steps; s++) {
    out.push(argmax(logits));
    if (s + 1 === steps) break;
    const next = model.decodeStep(
      cache,
      Tensor.from([out[s]], [1, 1], "i32"),
      Tensor.from([P + s], [1, 1], "i32"),
    );
    logits = await next.toArray();
  }
  cache.dispose();
  return out;
}

/** The folders and `expected.json` under `outDir`; returns the expected entries. */
export async function writeParityFolders(outDir: string) {
  await initGpu();
  const tok = charTokenizer();
  const files = { ...charTokenizerTexts(), "generation_config.json": GENERATION };
  const chatText = tok.applyChatTemplate(CHAT, { addGenerationPrompt: true });
  const sequences = [
    tok.encode(chatText, { addSpecialTokens: false }),
    tok.encode("#### 6\n12+7=19", { addSpecialTokens: false }),
    tok.encode("1+1=", { addSpecialTokens: false }),
  ];
  // Every family in f32, and one folder saved bf16 (transformers upcasts it to f32 on load).
  const variants: [string, Record<string, unknown>, TorchFloatDtype][] = [
    ...Object.entries(TINY_FAMILIES).map((
      [n, j],
    ): [string, Record<string, unknown>, TorchFloatDtype] => [
      n,
      j,
      "float32",
    ]),
    [
      "qwen2.5 (5.x), saved bf16",
      { ...TINY_FAMILIES["qwen2.5 (5.x)"], dtype: "bfloat16" },
      "bfloat16",
    ],
  ];
  const entries = [];
  let seed = 1;
  for (const [name, json, dtype] of variants) {
    const config = parseModelConfig(json, { file: name });
    const shapes = weightShapes(config);
    const init = tinyWeights(config, { seed: seed++, init: "varied" });
    const tensors = new Map([...init].map(([n, w]) => [n, floatTensor(shapes.get(n)!, w)]));
    const folder = `${outDir}/${slug(name)}`;
    await writeModelFolder(folder, { config, tensors, dtype, files, overwrite: true });
    // Score what was written: bf16 folders hold rounded weights.
    const back = await readModelFolder(folder);
    const weights = new Map(
      [...back.tensors].map(([n, t]) => [n, Float32Array.from(tensorToFloat32(t))]),
    );
    const model = CausalLM.fromTensors(back.config, weights);
    const scored = [];
    for (const ids of sequences) {
      scored.push({
        ids,
        ...await scoreSequence(model, weights, ids),
        greedy: await greedy(model, ids, GREEDY_TOKENS),
      });
    }
    model.dispose();
    const spelling = back.config.spelling.rope === "rope_theta" ? "4.x" : "5.x";
    entries.push({
      name,
      folder: slug(name),
      architecture: back.config.architectures[0],
      spelling,
      sequences: scored,
    });
  }
  const expected = {
    strings: PARITY_STRINGS.map((text) => ({
      text,
      ids: tok.encode(text, { addSpecialTokens: false }),
    })),
    chat: { messages: CHAT, text: chatText },
    models: entries,
  };
  await Deno.writeTextFile(`${outDir}/expected.json`, JSON.stringify(expected, null, 1) + "\n");
  return expected;
}

if (import.meta.main) {
  const out = Deno.args[0] ?? "outputs/transformers_parity";
  await Deno.mkdir(out, { recursive: true });
  const expected = await writeParityFolders(out);
  for (const m of expected.models) {
    const err = Math.max(...m.sequences.map((s) => s.refMaxAbsErr));
    console.log(
      `${m.folder.padEnd(40)} ${m.architecture.padEnd(20)} log-prob |GPU - CPU ref| ${
        err.toExponential(2)
      }`,
    );
  }
  console.log(`wrote ${expected.models.length} folders and ${out}/expected.json`);
}
