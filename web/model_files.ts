/**
 * Models as Hugging Face folders in the trainer worker: the starting model fetched from the page's
 * origin, a folder the user picked or dropped (config.json, *.safetensors, tokenizer files), and
 * the trained model zipped in the dtype it came in. A folder whose tensors cannot fit the
 * adapter's buffers is refused from its config.json alone, before any weight is read.
 */
import { zipSync } from "fflate";
import {
  charTokenizerTexts,
  checkModelTensors,
  expectedTensorShapes,
  fromFloat32,
  HfTokenizer,
  type ModelConfig,
  parseModelConfig,
  parseSafetensors,
  type RawTensor,
  serializeModelConfig,
  serializeSafetensors,
  tensorToFloat32,
  type Tokenizer,
  TOKENIZER_FILE_NAMES,
} from "../src/io/mod.ts";
import { tinyModelConfig, tinyWeights } from "../src/nn/mod.ts";
import type { ModelInfo, PickedFile } from "./protocol.ts";

/** A model folder held in memory; weights as f32 by Hugging Face name. */
export interface ModelFolder {
  /** Where it came from, for the page. */
  source: string;
  config: ModelConfig;
  tensors: Map<string, Float32Array>;
  /** Tokenizer files (tokenizer.json, tokenizer_config.json, chat_template.jinja, ...) as text. */
  tokenizerFiles: Record<string, string>;
  /** generation_config.json, kept for the download. */
  generationConfig: string | null;
}

/** The folder's tokenizer, with a separate chat_template.jinja when the folder has one. */
export function folderTokenizer(folder: ModelFolder): Tokenizer {
  const f = folder.tokenizerFiles;
  const json = f["tokenizer.json"];
  if (!json) throw new Error(`${folder.source}: no tokenizer.json`);
  const template = f["chat_template.jinja"];
  return new HfTokenizer(json, f["tokenizer_config.json"] ?? "{}", {
    source: folder.source,
    ...(template ? { chatTemplate: template } : {}),
  });
}

/** dtype names the download keeps: what config.json says, where it is a float type we write. */
function sourceDtype(config: ModelConfig): "float32" | "float16" | "bfloat16" {
  const d = config.torchDtype;
  return d === "float16" || d === "bfloat16" ? d : "float32";
}

/** Parameters, largest tensor (as f32) and a training-memory estimate, from the config. */
export function modelInfo(config: ModelConfig, source: string): ModelInfo {
  let parameters = 0;
  let largest = { name: "", bytes: 0 };
  for (const [name, shape] of expectedTensorShapes(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    parameters += n;
    if (n * 4 > largest.bytes) largest = { name, bytes: n * 4 };
  }
  return {
    source,
    modelType: config.modelType,
    layers: config.numHiddenLayers,
    hidden: config.hiddenSize,
    vocab: config.vocabSize,
    maxPositions: config.maxPositionEmbeddings,
    parameters,
    dtype: sourceDtype(config),
    // f32 weights, gradients and AdamW's two moments: 16 bytes per parameter.
    trainingBytes: parameters * 16,
    largestTensor: largest,
  };
}

export interface DeviceBudget {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  /** Memory the tab may use for training state (navigator.deviceMemory, or a default). */
  memoryBytes: number;
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(b < 2 ** 24 ? 2 : 0)} MiB`;

/** Why the model cannot be trained on this adapter, with the numbers; null when it fits. */
export function sizeProblem(info: ModelInfo, budget: DeviceBudget): string | null {
  const t = info.largestTensor;
  const binding = Math.min(budget.maxBufferSize, budget.maxStorageBufferBindingSize);
  if (t.bytes > binding) {
    const which = budget.maxStorageBufferBindingSize <= budget.maxBufferSize
      ? `maxStorageBufferBindingSize (${mib(budget.maxStorageBufferBindingSize)})`
      : `maxBufferSize (${mib(budget.maxBufferSize)})`;
    return `${info.source}: tensor "${t.name}" needs ${mib(t.bytes)} as f32 on the GPU, more ` +
      `than this adapter's ${which}; pick a smaller model`;
  }
  if (info.trainingBytes > budget.memoryBytes) {
    return `${info.source}: ${(info.parameters / 1e6).toFixed(1)}M parameters need about ` +
      `${mib(info.trainingBytes)} to train (f32 weights, gradients and AdamW state), more than ` +
      `the ${mib(budget.memoryBytes)} this tab can count on (navigator.deviceMemory); pick a ` +
      "smaller model";
  }
  return null;
}

/** The embedded tiny model with seeded weights, used when the page ships no starting model. */
export function randomFolder(options: { seed?: number } = {}): ModelFolder {
  const config = tinyModelConfig();
  return {
    source: "random init (seeded)",
    config,
    tensors: tinyWeights(config, { seed: options.seed ?? 1 }),
    tokenizerFiles: { ...charTokenizerTexts() },
    generationConfig: null,
  };
}

function weightsFrom(
  files: { name: string; bytes: Uint8Array }[],
  config: ModelConfig,
  at: string,
) {
  const raw = new Map<string, RawTensor>();
  for (const f of files) {
    for (const t of parseSafetensors(f.bytes, { file: f.name }).tensors) raw.set(t.name, t);
  }
  checkModelTensors(config, raw, at);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of raw) {
    tensors.set(name, tensorToFloat32({ dtype: t.dtype, shape: t.shape, data: t.bytes }));
  }
  return tensors;
}

async function fetchOk(url: string): Promise<Response> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res;
}

/**
 * A starting model shipped with the page (`base/files.json` lists it), shown as `source`; null
 * when none is.
 */
export async function fetchModelFolder(base: string, source: string): Promise<ModelFolder | null> {
  const files = await (await fetchOk(`${base}/files.json`)).json() as string[];
  if (!files.includes("config.json") || !files.includes("model.safetensors")) return null;
  const text = async (name: string) => await (await fetchOk(`${base}/${name}`)).text();
  const config = parseModelConfig(await text("config.json"), { file: `${base}/config.json` });
  const bytes = new Uint8Array(await (await fetchOk(`${base}/model.safetensors`)).arrayBuffer());
  const tensors = weightsFrom([{ name: `${base}/model.safetensors`, bytes }], config, base);
  const tokenizerFiles: Record<string, string> = { ...charTokenizerTexts() };
  for (const name of TOKENIZER_FILE_NAMES) {
    if (files.includes(name)) tokenizerFiles[name] = await text(name);
  }
  const generationConfig = files.includes("generation_config.json")
    ? await text("generation_config.json")
    : null;
  return { source, config, tensors, tokenizerFiles, generationConfig };
}

/** The files directly inside the folder that holds the shallowest config.json. */
function modelDir(files: PickedFile[]): { top: string; inDir: Map<string, File> } {
  const depth = (p: string) => p.split("/").length;
  const configs = files.filter((f) => f.path.split("/").at(-1) === "config.json")
    .sort((a, b) => depth(a.path) - depth(b.path));
  if (configs.length === 0) {
    const names = files.slice(0, 6).map((f) => f.path).join(", ");
    throw new Error(`no config.json among the ${files.length} files given (${names}…)`);
  }
  const dir = configs[0].path.slice(0, -"config.json".length);
  const inDir = new Map<string, File>();
  for (const f of files) {
    const rest = f.path.startsWith(dir) ? f.path.slice(dir.length) : null;
    if (rest && !rest.includes("/")) inDir.set(rest, f.file);
  }
  // Loose files (dropped without their folder) have no folder name to show.
  return { top: dir.replace(/\/$/, "") || "dropped files", inDir };
}

/**
 * Reads a picked or dropped model folder. The config is checked against `budget` first, so a
 * model too large for the adapter is refused before its weights are read.
 */
export async function readPickedFolder(
  files: PickedFile[],
  budget: DeviceBudget,
): Promise<ModelFolder> {
  const { top, inDir } = modelDir(files);
  const config = parseModelConfig(await inDir.get("config.json")!.text(), {
    file: `${top}/config.json`,
  });
  const problem = sizeProblem(modelInfo(config, top), budget);
  if (problem) throw new Error(problem);
  if (!inDir.has("tokenizer.json")) {
    throw new Error(`${top}: no tokenizer.json (the folder needs its tokenizer files)`);
  }
  const shards = [...inDir].filter(([name]) => name.endsWith(".safetensors"));
  if (shards.length === 0) throw new Error(`${top}: no *.safetensors file in the folder`);
  const tensors = weightsFrom(
    await Promise.all(shards.map(async ([name, f]) => ({
      name: `${top}/${name}`,
      bytes: new Uint8Array(await f.arrayBuffer()),
    }))),
    config,
    top,
  );
  const tokenizerFiles: Record<string, string> = {};
  for (const name of TOKENIZER_FILE_NAMES) {
    const f = inDir.get(name);
    if (f) tokenizerFiles[name] = await f.text();
  }
  const gen = inDir.get("generation_config.json");
  return {
    source: top,
    config,
    tensors,
    tokenizerFiles,
    generationConfig: gen ? await gen.text() : null,
  };
}

/** The folder's files by name, weights in the dtype the folder came in (one model.safetensors). */
export function folderFiles(
  folder: ModelFolder,
  tensors: ReadonlyMap<string, Float32Array> = folder.tensors,
): Record<string, Uint8Array> {
  const dtype = sourceDtype(folder.config);
  const st = dtype === "float32" ? "F32" : dtype === "float16" ? "F16" : "BF16";
  const raw: RawTensor[] = [];
  for (const [name, shape] of expectedTensorShapes(folder.config)) {
    const values = tensors.get(name);
    if (!values) throw new Error(`${folder.source}: no weights for ${name}`);
    raw.push({ name, dtype: st, shape, bytes: fromFloat32(values, st) });
  }
  const enc = new TextEncoder();
  const out: Record<string, Uint8Array> = {
    "config.json": enc.encode(serializeModelConfig({ ...folder.config, torchDtype: dtype })),
    "model.safetensors": serializeSafetensors(raw, { metadata: { format: "pt" } }),
  };
  for (const [file, text] of Object.entries(folder.tokenizerFiles)) out[file] = enc.encode(text);
  if (folder.generationConfig) out["generation_config.json"] = enc.encode(folder.generationConfig);
  return out;
}

/** The folder as a zip under `name/` (weights stored, not deflated: they barely compress). */
export function zipModelFolder(
  folder: ModelFolder,
  tensors: ReadonlyMap<string, Float32Array>,
  name: string,
): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  for (const [file, bytes] of Object.entries(folderFiles(folder, tensors))) {
    entries[`${name}/${file}`] = bytes;
  }
  return zipSync(entries, { level: 0 });
}
