/** A chat message in the OpenAI / Hugging Face style that verl's `prompt` column holds. */
export interface ChatMessage {
  role: string;
  content: string;
}

/**
 * What the trainer, data loader and reward manager need from a tokenizer. Both the Hugging Face
 * tokenizer (tokenizer.json + tokenizer_config.json) and the synthetic tasks' character tokenizer
 * implement it.
 */
export interface Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly padTokenId: number;
  readonly bosTokenId: number | null;
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: ArrayLike<number>, options?: { skipSpecialTokens?: boolean }): string;
  /** Renders messages through the chat template (Jinja from tokenizer_config.json). */
  applyChatTemplate(
    messages: ChatMessage[],
    options?: { addGenerationPrompt?: boolean },
  ): string;
}
