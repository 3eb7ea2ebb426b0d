/**
 * The character-level tokenizer of the synthetic tasks, written as standard Hugging Face files: a
 * byte-level BPE model without merges and without an unknown token, so each character of the
 * alphabet is one token and any other character is dropped (as transformers drops it with these
 * files, whichever tokenizer class it picks). The same {@link HfTokenizer} and `transformers`' fast tokenizer
 * (PreTrainedTokenizerFast in 4.x, TokenizersBackend in 5.x) load it to the same ids. The vocabulary
 * is spelled in GPT-2's byte alphabet (space as "Ġ", newline as "Ċ"), so a loader that rebuilds a
 * byte-level pipeline of its own from the vocabulary (transformers 5 does this for Qwen2 folders)
 * still maps every alphabet character to its id.
 *
 * Regenerate the committed copy with `deno run -A src/io/char_tokenizer.ts [dir]`.
 */
import { HfTokenizer } from "./tokenizer.ts";

/** Special tokens, in id order. There is no BOS: prompts start with a role marker instead. */
export const CHAR_SPECIAL_TOKENS = [
  "<pad>",
  "<eos>",
  "<unk>",
  "<|system|>",
  "<|user|>",
  "<|assistant|>",
] as const;

/**
 * Characters after the special tokens: enough for arithmetic prompts and short lowercase words, and
 * 64 ids in total, a friendly size for GPU tiles. Anything else is dropped when encoding.
 */
export const CHAR_ALPHABET = "\n 0123456789+-*/=#().,?:!'%<>_^|abcdefghijklmnopqrstuvwxyz";

/** Each turn is a role marker, the content and `<eos>`, so a reply ends on the model's stop token. */
export const CHAR_CHAT_TEMPLATE = "{%- for message in messages %}" +
  "{%- if message.role not in ['system', 'user', 'assistant'] %}" +
  "{{- raise_exception('unknown role: ' + message.role) }}{%- endif %}" +
  "{{- '<|' + message.role + '|>' + message.content + eos_token }}" +
  "{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|assistant|>' }}{%- endif %}";

/**
 * GPT-2's reversible byte -> character map (what the ByteLevel pre-tokenizer emits): printable
 * Latin-1 bytes stand for themselves, the others for code points from 256 up, in byte order.
 */
export function byteLevelChar(byte: number): string {
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  if (printable(byte)) return String.fromCharCode(byte);
  let n = 0;
  for (let b = 0; b < byte; b++) if (!printable(b)) n++;
  return String.fromCharCode(256 + n);
}

/** What a character tokenizer is built from; every field has the synthetic tasks' default. */
export interface CharTokenizerOptions {
  alphabet?: string;
  /** Special tokens after {@link CHAR_SPECIAL_TOKENS} (e.g. a `<|tool|>` role marker). */
  extraSpecialTokens?: readonly string[];
  /**
   * Multi-character tokens after the alphabet, matched whole before the characters are split (as
   * a BPE vocabulary's merges would make them one token); decoded to their text.
   */
  addedTokens?: readonly string[];
  chatTemplate?: string;
}

export interface CharTokenizerFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
}

/** Builds tokenizer.json and tokenizer_config.json for `alphabet` (default {@link CHAR_ALPHABET}). */
export function charTokenizerFiles(options: CharTokenizerOptions = {}): CharTokenizerFiles {
  const chars = [...(options.alphabet ?? CHAR_ALPHABET)];
  if (new Set(chars).size !== chars.length) throw new Error("alphabet has repeated characters");
  const wide = chars.find((c) => c.charCodeAt(0) >= 0x80);
  if (wide !== undefined) {
    throw new Error(`alphabet character ${JSON.stringify(wide)} is not ASCII (one byte per token)`);
  }
  const vocab: Record<string, number> = {};
  const specials = [...CHAR_SPECIAL_TOKENS, ...(options.extraSpecialTokens ?? [])];
  const entry = (content: string, id: number, special: boolean) => {
    vocab[content] = id;
    return {
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special,
    };
  };
  const added = specials.map((content, id) => entry(content, id, true));
  chars.forEach((c, i) => (vocab[byteLevelChar(c.charCodeAt(0))] = specials.length + i));
  const multi = options.addedTokens ?? [];
  multi.forEach((c, i) => added.push(entry(c, specials.length + chars.length + i, false)));
  const byteLevel = {
    type: "ByteLevel",
    add_prefix_space: false,
    trim_offsets: true,
    use_regex: false,
  };
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        // "[\s\S]" rather than "." so newlines split too (Oniguruma's "." excludes "\n").
        { type: "Split", pattern: { Regex: "[\\s\\S]" }, behavior: "Isolated", invert: false },
        byteLevel,
      ],
    },
    post_processor: null,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
  const tokenizerConfig = {
    added_tokens_decoder: Object.fromEntries(
      added.map(({ id, ...rest }) => [String(id), rest]),
    ),
    additional_special_tokens: specials.slice(3),
    bos_token: null,
    chat_template: options.chatTemplate ?? CHAR_CHAT_TEMPLATE,
    // Cleaning would eat the space in "3 ." and break round trips.
    clean_up_tokenization_spaces: false,
    eos_token: "<eos>",
    model_max_length: 4096,
    pad_token: "<pad>",
    tokenizer_class: "PreTrainedTokenizerFast",
    unk_token: "<unk>",
  };
  return { tokenizerJson, tokenizerConfig };
}

/** The two files as text, in the form committed under assets/char_tokenizer/. */
export function charTokenizerTexts(
  options: CharTokenizerOptions = {},
): { "tokenizer.json": string; "tokenizer_config.json": string } {
  const files = charTokenizerFiles(options);
  return {
    "tokenizer.json": JSON.stringify(files.tokenizerJson, null, 2) + "\n",
    "tokenizer_config.json": JSON.stringify(files.tokenizerConfig, null, 2) + "\n",
  };
}

/** The character tokenizer, ready to use. */
export function charTokenizer(options: CharTokenizerOptions = {}): HfTokenizer {
  const files = charTokenizerFiles(options);
  return new HfTokenizer(files.tokenizerJson, files.tokenizerConfig, { source: "char_tokenizer" });
}

if (import.meta.main) {
  const dir = Deno.args[0] ?? new URL("../../assets/char_tokenizer", import.meta.url).pathname;
  await Deno.mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(charTokenizerTexts())) {
    await Deno.writeTextFile(`${dir}/${name}`, text);
  }
  console.log(`wrote ${dir}`);
}
