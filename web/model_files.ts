/**
 * Models as Hugging Face folders in the tab: the starting model fetched from the page's own
 * origin, a folder picked from disk (`<input webkitdirectory>`), and the trained model zipped for
 * download. Weights are kept on the CPU as f32 by HF name.
 */
import { zipSync } from "fflate";
import {
  charTokenizerTexts,
  checkModelTensors,
  HfTokenizer,
  type ModelConfig,
  parseModelConfig,
  parseSafetensors,
  type RawTensor,
  serializeModelConfig,
  serializeSafetensors,
  tensorToFloat32,
  type Tokenizer,
} from "../src/io/mod.ts";
import { tinyModelConfig, tinyWeights, weightShapes } from "../src/nn/mod.ts";

/** A model folder held in memory. */
export interface ModelFolder {
  /** Where it came from, for the page. */
  source: string;
  config: ModelConfig;
  tensors: Map<string, Float32Array>;
  /** tokenizer.json and tokenizer_config.json text. */
  tokenizerFiles: Record<string, string>;
}

/** The folder's tokenizer: its own files when present, else the character tokenizer. */
export function folderTokenizer(folder: ModelFolder): Tokenizer {
  const json = folder.tokenizerFiles["tokenizer.json"];
  const cfg = folder.tokenizerFiles["tokenizer_config.json"] ?? "{}";
  return new HfTokenizer(json, cfg, { source: folder.source });
}

function weightsFrom(
  files: { name: string; bytes: Uint8Array }[],
  config: ModelConfig,
  where: string,
) {
  const raw = new Map<string, RawTensor>();
  for (const f of files) {
    for (const t of parseSafetensors(f.bytes, { file: f.name }).tensors) raw.set(t.name, t);
  }
  checkModelTensors(config, raw, where);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of raw) {
    tensors.set(name, tensorToFloat32({ dtype: t.dtype, shape: t.shape, data: t.bytes }));
  }
  return tensors;
}

/**
 * The embedded tiny model with seeded random weights, used when no starting model is shipped. Its
 * default vocabulary is the character tokenizer's, whose files come with it.
 */
export function randomFolder(options: { seed?: number } = {}): ModelFolder {
  const config = tinyModelConfig();
  return {
    source: "random init (seeded)",
    config,
    tensors: tinyWeights(config, { seed: options.seed ?? 1 }),
    tokenizerFiles: { ...charTokenizerTexts() },
  };
}

async function fetchOk(url: string): Promise<Response> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res;
}

/** The starting model shipped with the page (`base/files.json` lists it); null when none is. */
export async function fetchModelFolder(base: string): Promise<ModelFolder | null> {
  const files = await (await fetchOk(`${base}/files.json`)).json() as string[];
  if (!files.includes("config.json") || !files.includes("model.safetensors")) return null;
  const text = await (await fetchOk(`${base}/config.json`)).text();
  const config = parseModelConfig(text, { file: `${base}/config.json` });
  const bytes = new Uint8Array(await (await fetchOk(`${base}/model.safetensors`)).arrayBuffer());
  const tensors = weightsFrom([{ name: `${base}/model.safetensors`, bytes }], config, base);
  const tokenizerFiles: Record<string, string> = { ...charTokenizerTexts() };
  for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
    if (files.includes(name)) {
      tokenizerFiles[name] = await (await fetchOk(`${base}/${name}`)).text();
    }
  }
  return { source: `${base}/`, config, tensors, tokenizerFiles };
}

/** Reads a folder picked with `<input type=file webkitdirectory>` (sharded safetensors too). */
export async function readModelFolder(files: ArrayLike<File>): Promise<ModelFolder> {
  const list = Array.from(files);
  const named = (name: string) => list.find((f) => f.name === name);
  const top = list[0]?.webkitRelativePath.split("/")[0] || "upload";
  const cfgFile = named("config.json");
  if (!cfgFile) throw new Error(`${top}: no config.json in the chosen folder`);
  const shards = list.filter((f) => f.name.endsWith(".safetensors"));
  if (shards.length === 0) throw new Error(`${top}: no *.safetensors file in the chosen folder`);
  const config = parseModelConfig(await cfgFile.text(), { file: `${top}/config.json` });
  const tensors = weightsFrom(
    await Promise.all(shards.map(async (f) => ({
      name: `${top}/${f.name}`,
      bytes: new Uint8Array(await f.arrayBuffer()),
    }))),
    config,
    top,
  );
  const tokenizerFiles: Record<string, string> = { ...charTokenizerTexts() };
  for (const name of ["tokenizer.json", "tokenizer_config.json"]) {
    const f = named(name);
    if (f) tokenizerFiles[name] = await f.text();
  }
  return { source: `${top}/ (uploaded)`, config, tensors, tokenizerFiles };
}

/** The folder as a zip: config.json, model.safetensors (f32) and the tokenizer files. */
export function zipModelFolder(folder: ModelFolder, options: { name: string }): Uint8Array {
  const shapes = weightShapes(folder.config);
  const raw: RawTensor[] = [];
  for (const [name, values] of folder.tensors) {
    const shape = shapes.get(name) ?? [values.length];
    raw.push({
      name,
      dtype: "F32",
      shape,
      bytes: new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
    });
  }
  const enc = new TextEncoder();
  const config = { ...folder.config, torchDtype: "float32" };
  const entries: Record<string, Uint8Array> = {
    [`${options.name}/config.json`]: enc.encode(serializeModelConfig(config)),
    [`${options.name}/model.safetensors`]: serializeSafetensors(raw, {
      metadata: { format: "pt" },
    }),
  };
  for (const [file, text] of Object.entries(folder.tokenizerFiles)) {
    entries[`${options.name}/${file}`] = enc.encode(text);
  }
  // Weights barely compress; store them so the zip is quick to build.
  return zipSync(entries, { level: 0 });
}

/** Starts a browser download of `bytes`. */
export function download(bytes: Uint8Array, fileName: string, type = "application/zip"): void {
  const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = fileName;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
