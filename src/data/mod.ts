/**
 * Data: verl-schema parquet in and out, the one prompt builder, the RL prompt dataset, SFT
 * examples, a resumable seeded loader, left-padded collation, and the synthetic arithmetic task.
 */
export { collatePrompts, type PromptTensors } from "./collate.ts";
export { type DataItem, RLDataset, type RLDatasetOptions } from "./dataset.ts";
export {
  buildPrompt,
  type PromptItem,
  type PromptSource,
  renderChat,
  type RenderOptions,
  renderPrompt,
  rowsToPromptItems,
  truncate,
  type Truncation,
  TRUNCATIONS,
} from "./prompt.ts";
export { DataError } from "./errors.ts";
export { type OverlongReport, PromptLengths, reportOverlong } from "./prompt_stats.ts";
export { DataLoader, type DataLoaderOptions, type LoaderState } from "./loader.ts";
export { parquetRows, readParquet, type Row, type WriteData, writeParquet } from "./parquet.ts";
export { parseChatMessages, parseRLRow, type RLRow, type RowPlace } from "./rows.ts";
export {
  type ArithmeticOptions,
  evaluateExpression,
  generateArithmetic,
  type Operator,
} from "./synthetic.ts";
export { loadSftExamples, type SftExample } from "./sft_data.ts";
export {
  multiturnExampleFromRow,
  type MultiturnOptions,
  multiturnTokens,
} from "./sft_multiturn.ts";
export {
  calcToolConversation,
  type CalcToolOptions,
  calcToolSftRows,
  calcToolSplits,
  CALCULATOR_TOOL,
  generateCalcTool,
} from "./calc_tool.ts";
export {
  generateSearchTask,
  SEARCH_INSTRUCTION,
  type SearchTask,
  type SearchTaskOptions,
} from "./search_task.ts";
