/**
 * Deno-only reading and writing of Hugging Face model folders (config.json, safetensors weights,
 * tokenizer files, generation_config.json). Writes go to a temporary sibling folder that is renamed
 * into place once complete, so a crash never leaves a half-written model behind.
 */
import { convertFloatBytes, dtypeFromTorch, isFloatDtype, type TorchFloatDtype } from "./dtype.ts";
import { type ModelConfig, parseModelConfig, serializeModelConfig } from "./hf_config.ts";
import {
  type GenerationConfig,
  generationConfigToJson,
  parseGenerationConfig,
} from "./generation_config.ts";
import {
  checkModelTensors,
  expectedTensorShapes,
  HEAD_WEIGHT,
  type HfTensor,
} from "./hf_weights.ts";
import type { RawTensor } from "./safetensors.ts";
import { joinPath, readSafetensorsFolder, writeSafetensorsFolder } from "./safetensors_fs.ts";
import {
  type HfTokenizer,
  tokenizerFromFiles,
  type TokenizerFromFilesOptions,
} from "./tokenizer.ts";

/** Tokenizer-related files copied along with a model when present. */
export const TOKENIZER_FILE_NAMES = [
  "tokenizer.json",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "chat_template.jinja",
  "added_tokens.json",
  "vocab.json",
  "merges.txt",
] as const;

/** Every file that travels with the weights, verbatim: the tokenizer's and generation_config.json. */
export const COMPANION_FILE_NAMES = [...TOKENIZER_FILE_NAMES, "generation_config.json"] as const;

export interface ModelFolder {
  path: string;
  config: ModelConfig;
  /** Every tensor in the weights, keyed by Hugging Face name; empty when not requested. */
  tensors: Map<string, HfTensor>;
  /** Text of each tokenizer file present, keyed by file name. */
  tokenizerFiles: Record<string, string>;
  /** Text of each {@link COMPANION_FILE_NAMES} file present: what a save copies along. */
  files: Record<string, string>;
  generationConfig: GenerationConfig | null;
}

async function readTextIfPresent(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/**
 * Reads a model folder. Needed tensors are checked against the config (missing ones and shape
 * mismatches are errors naming the tensor); `tensors: false` reads only config and tokenizer files.
 */
export async function readModelFolder(
  path: string,
  options: { tensors?: boolean } = {},
): Promise<ModelFolder> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new Error(`model folder ${path} does not exist`);
    throw e;
  }
  if (!info.isDirectory) throw new Error(`model folder ${path} is not a directory`);
  const configPath = joinPath(path, "config.json");
  const configText = await readTextIfPresent(configPath);
  if (configText === null) throw new Error(`missing ${configPath}`);
  const config = parseModelConfig(configText, { file: configPath });

  const files = await readCompanionFiles(path);
  const tokenizerFiles: Record<string, string> = {};
  for (const name of TOKENIZER_FILE_NAMES) if (name in files) tokenizerFiles[name] = files[name];
  const genPath = joinPath(path, "generation_config.json");
  const genText = files["generation_config.json"] ?? null;
  const generationConfig = genText === null
    ? null
    : parseGenerationConfig(genText, { file: genPath });

  const tensors = new Map<string, HfTensor>();
  if (options.tensors ?? true) {
    for (const [name, t] of await readSafetensorsFolder(path)) {
      tensors.set(name, { dtype: t.dtype, shape: t.shape, data: t.bytes });
    }
    checkModelTensors(config, tensors, path);
  }
  return { path, config, tensors, tokenizerFiles, files, generationConfig };
}

/** The {@link COMPANION_FILE_NAMES} files present in `folder`, as text. */
export async function readCompanionFiles(folder: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of COMPANION_FILE_NAMES) {
    const text = await readTextIfPresent(joinPath(folder, name));
    if (text !== null) files[name] = text;
  }
  return files;
}

/**
 * Builds the tokenizer of a folder (a model folder or a tokenizer-only one, as `data.tokenizer`
 * names): tokenizer.json, tokenizer_config.json, and chat_template.jinja, which transformers 5
 * writes beside the config and which wins over the config's template.
 */
export async function loadTokenizer(
  folder: string,
  options: Omit<TokenizerFromFilesOptions, "source"> = {},
): Promise<HfTokenizer> {
  try {
    if (!(await Deno.stat(folder)).isDirectory) throw new Error(`${folder} is not a directory`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new Error(`tokenizer folder ${folder} does not exist`);
    }
    throw e;
  }
  return tokenizerFromFiles(await readCompanionFiles(folder), { ...options, source: folder });
}

export interface WriteModelFolderOptions {
  config: ModelConfig;
  tensors: ReadonlyMap<string, HfTensor> | Readonly<Record<string, HfTensor>>;
  /** Float tensors are converted to this dtype, and config.json says so; default: kept as given. */
  dtype?: TorchFloatDtype;
  /** File name -> text or JSON object, e.g. from {@link ModelFolder.tokenizerFiles}. */
  tokenizerFiles?: Readonly<Record<string, string | object>>;
  /**
   * More files written verbatim, e.g. {@link ModelFolder.files} (tokenizer files and
   * generation_config.json as they came); these win over `tokenizerFiles` of the same name.
   */
  files?: Readonly<Record<string, string>>;
  /** Written as generation_config.json when `files` holds none. */
  generationConfig?: GenerationConfig | null;
  /** Split the weights into shards of at most this many bytes (default: one file). */
  maxShardBytes?: number;
  /** Replace an existing folder at `path` (default false: an existing folder is an error). */
  overwrite?: boolean;
}

function plainName(name: string): string {
  if (!name || name.includes("/") || name.includes("\\") || name === "." || name === "..") {
    throw new Error(`tokenizer file name ${JSON.stringify(name)} is not a plain file name`);
  }
  return name;
}

function splitPath(path: string): [string, string] {
  const trimmed = path.replace(/\/+$/, "");
  const slash = trimmed.lastIndexOf("/");
  return slash < 0 ? [".", trimmed] : [trimmed.slice(0, slash) || "/", trimmed.slice(slash + 1)];
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Writes a complete model folder at `path`; see {@link WriteModelFolderOptions}. */
export async function writeModelFolder(
  path: string,
  options: WriteModelFolderOptions,
): Promise<void> {
  const given = options.tensors instanceof Map
    ? options.tensors as ReadonlyMap<string, HfTensor>
    : new Map(Object.entries(options.tensors));
  const config = options.dtype ? { ...options.config, torchDtype: options.dtype } : options.config;
  const target = options.dtype ? dtypeFromTorch(options.dtype) : null;
  checkModelTensors(config, given, path);
  if (!options.overwrite && (await exists(path))) {
    throw new Error(`${path} already exists (pass overwrite: true to replace it)`);
  }
  const expected = expectedTensorShapes(config);
  // Model order first, so shards fill layer by layer as transformers' do; extras keep their order.
  const names = [...expected.keys(), ...[...given.keys()].filter((n) => !expected.has(n))];
  // Tied checkpoints carry no lm_head; transformers re-ties it from the embedding.
  const kept = names.filter((n) => !(config.tieWordEmbeddings && n === HEAD_WEIGHT));
  const raw: RawTensor[] = kept.map((name) => {
    const t = given.get(name)!;
    const dtype = target && isFloatDtype(t.dtype) ? target : t.dtype;
    return { name, dtype, shape: t.shape, bytes: convertFloatBytes(t.data, t.dtype, dtype) };
  });

  const [parent, base] = splitPath(path);
  await Deno.mkdir(parent, { recursive: true });
  const stamp = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const tmp = joinPath(parent, `.${base}.tmp-${stamp}`);
  await Deno.mkdir(tmp);
  try {
    await Deno.writeTextFile(joinPath(tmp, "config.json"), serializeModelConfig(config));
    await writeSafetensorsFolder(tmp, raw, {
      maxShardBytes: options.maxShardBytes,
      // transformers refuses safetensors weights whose metadata lacks a known format.
      metadata: { format: "pt" },
    });
    const files = { ...options.tokenizerFiles, ...options.files };
    for (const [name, content] of Object.entries(files)) {
      const text = typeof content === "string" ? content : JSON.stringify(content, null, 2) + "\n";
      await Deno.writeTextFile(joinPath(tmp, plainName(name)), text);
    }
    if (options.generationConfig && !("generation_config.json" in files)) {
      const json = generationConfigToJson(options.generationConfig);
      await Deno.writeTextFile(
        joinPath(tmp, "generation_config.json"),
        JSON.stringify(json, null, 2) + "\n",
      );
    }
    await moveIntoPlace(tmp, path, joinPath(parent, `.${base}.old-${stamp}`));
  } catch (e) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw e;
  }
}

/** Renames `tmp` to `path`, first moving an existing `path` aside and deleting it afterwards. */
async function moveIntoPlace(tmp: string, path: string, aside: string): Promise<void> {
  const replacing = await exists(path);
  if (replacing) await Deno.rename(path, aside);
  try {
    await Deno.rename(tmp, path);
  } catch (e) {
    if (replacing) await Deno.rename(aside, path).catch(() => {});
    throw e;
  }
  if (replacing) await Deno.remove(aside, { recursive: true });
}
