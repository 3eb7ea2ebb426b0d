/**
 * Data: verl-schema parquet in and out, the RL prompt dataset, a resumable seeded loader,
 * left-padded collation, and the synthetic arithmetic task.
 */
export { collatePrompts, type PromptTensors } from "./collate.ts";
export {
  type DataItem,
  RLDataset,
  type RLDatasetOptions,
  truncate,
  type Truncation,
  TRUNCATIONS,
} from "./dataset.ts";
export { DataError } from "./errors.ts";
export {
  DataLoader,
  type DataLoaderOptions,
  type LoaderBatch,
  type LoaderState,
} from "./loader.ts";
export { readParquet, type Row, type WriteData, writeParquet } from "./parquet.ts";
export { parseRLRow, type RLRow } from "./rows.ts";
export {
  type ArithmeticOptions,
  evaluateExpression,
  generateArithmetic,
  type Operator,
} from "./synthetic.ts";
export { loadSftExamples, type SftExample } from "./sft_data.ts";
