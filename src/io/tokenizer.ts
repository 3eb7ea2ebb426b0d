/**
 * A Hugging Face tokenizer from the contents of `tokenizer.json` and `tokenizer_config.json`
 * (objects or text, so a browser can pass what it fetched). Encoding and decoding go through
 * @huggingface/tokenizers, chat templates through @huggingface/jinja.
 */
import { Tokenizer as CoreTokenizer } from "@huggingface/tokenizers";
import { Template } from "@huggingface/jinja";
import type { ChatMessage, Tokenizer } from "./tokenizer_types.ts";

type Json = Record<string, unknown>;

export interface HfTokenizerOptions {
  /** A template that overrides the config's (e.g. from a separate `chat_template.jinja`). */
  chatTemplate?: string;
  /**
   * Variables every template render sees (verl's `data.apply_chat_template_kwargs`, e.g.
   * `{ enable_thinking: false }`); a call's own `extra` wins.
   */
  templateVariables?: Record<string, unknown>;
  /** Names the source in error messages. */
  source?: string;
}

export interface ChatTemplateOptions {
  addGenerationPrompt?: boolean;
  /** Further template variables, e.g. `{ enable_thinking: false }` for Qwen3. */
  extra?: Record<string, unknown>;
}

function toObject(source: string | object, what: string): Json {
  const raw = typeof source === "string" ? parseJson(source, what) : source;
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new Error(`${what}: expected a JSON object`);
  }
  return raw as Json;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${what}: not valid JSON (${(e as Error).message})`);
  }
}

/** Special tokens may be written as plain strings or as AddedToken objects with `content`. */
function tokenText(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (value && typeof value === "object" && typeof (value as Json).content === "string") {
    return (value as Json).content as string;
  }
  return null;
}

/** Picks the template string from `chat_template`, which may also be a list of named templates. */
function templateFrom(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    const named = value as { name?: string; template?: string }[];
    return (named.find((t) => t.name === "default") ?? named[0])?.template ?? null;
  }
  return null;
}

export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly padTokenId: number;
  readonly bosTokenId: number | null;
  readonly eosToken: string;
  readonly padToken: string;
  readonly bosToken: string | null;
  readonly chatTemplate: string | null;
  private readonly templateVariables: Record<string, unknown>;
  private readonly core: CoreTokenizer;
  private readonly config: Json;
  private compiled: Template | null = null;

  constructor(
    tokenizerJson: string | object,
    tokenizerConfig: string | object = {},
    options: HfTokenizerOptions = {},
  ) {
    const where = options.source ? `${options.source}/` : "";
    const json = toObject(tokenizerJson, `${where}tokenizer.json`);
    const config = { ...toObject(tokenizerConfig, `${where}tokenizer_config.json`) };
    // The core library expects plain strings where HF files may hold AddedToken objects.
    for (const key of ["bos_token", "eos_token", "pad_token", "unk_token"]) {
      if (key in config) config[key] = tokenText(config[key]);
    }
    if (Array.isArray(config.additional_special_tokens)) {
      config.additional_special_tokens = config.additional_special_tokens.map(tokenText);
    }
    this.config = config;
    this.core = new CoreTokenizer(json, config);
    let maxId = -1;
    for (const id of this.core.get_vocab(true).values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;

    const resolve = (key: string): [string, number] | null => {
      const text = config[key] as string | null | undefined;
      if (text == null) return null;
      const id = this.core.token_to_id(text);
      if (id === undefined) {
        throw new Error(
          `${where}tokenizer_config.json: ${key} ${JSON.stringify(text)} is not in the vocabulary`,
        );
      }
      return [text, id];
    };
    const eos = resolve("eos_token");
    if (!eos) throw new Error(`${where}tokenizer_config.json: no eos_token`);
    const pad = resolve("pad_token") ?? eos;
    const bos = resolve("bos_token");
    [this.eosToken, this.eosTokenId] = eos;
    [this.padToken, this.padTokenId] = pad;
    this.bosToken = bos?.[0] ?? null;
    this.bosTokenId = bos?.[1] ?? null;
    this.chatTemplate = options.chatTemplate ?? templateFrom(config.chat_template);
    this.templateVariables = { ...options.templateVariables };
  }

  /** Token ids of `text`; `addSpecialTokens` (default true, as in transformers) runs the post-processor. */
  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    return this.core.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  /** Text of `ids`; ids outside the vocabulary (a model's padded rows) decode to nothing. */
  decode(ids: ArrayLike<number>, options: { skipSpecialTokens?: boolean } = {}): string {
    const known: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = Number(ids[i]);
      if (this.core.id_to_token(id) !== undefined) known.push(id);
    }
    if (known.length === 0) return "";
    return this.core.decode(known, { skip_special_tokens: options.skipSpecialTokens ?? false });
  }

  /** The token string of one id, or undefined. */
  idToToken(id: number): string | undefined {
    return this.core.id_to_token(id);
  }

  /** The id of one token string, or undefined. */
  tokenToId(token: string): number | undefined {
    return this.core.token_to_id(token);
  }

  applyChatTemplate(messages: ChatMessage[], options: ChatTemplateOptions = {}): string {
    if (this.chatTemplate === null) throw new Error("this tokenizer has no chat_template");
    this.compiled ??= new Template(this.chatTemplate);
    const special = (key: string) => (this.config[key] as string | null | undefined) ?? undefined;
    return this.compiled.render({
      messages,
      add_generation_prompt: options.addGenerationPrompt ?? false,
      bos_token: special("bos_token") ?? "",
      eos_token: this.eosToken,
      pad_token: this.padToken,
      unk_token: special("unk_token"),
      additional_special_tokens: this.config.additional_special_tokens,
      tools: undefined,
      ...this.templateVariables,
      ...options.extra,
    });
  }
}

export interface TokenizerFromFilesOptions extends HfTokenizerOptions {
  /** Names the folder in error messages. */
  source: string;
}

/**
 * The tokenizer of a folder's files (name -> text): tokenizer.json, tokenizer_config.json, and
 * chat_template.jinja when present (transformers 5 keeps the template there, and it wins over the
 * config's). `chatTemplate` (verl's `custom_chat_template`) wins over both.
 */
export function tokenizerFromFiles(
  files: Readonly<Record<string, string>>,
  options: TokenizerFromFilesOptions,
): HfTokenizer {
  const where = options.source;
  const json = files["tokenizer.json"];
  if (json === undefined) throw new Error(`${where}: tokenizer.json is missing`);
  const template = options.chatTemplate ?? files["chat_template.jinja"];
  return new HfTokenizer(json, files["tokenizer_config.json"] ?? "{}", {
    ...options,
    ...(template === undefined ? {} : { chatTemplate: template }),
  });
}
