/**
 * The messages between the page (which only draws) and the trainer's dedicated Web Worker (which
 * owns the GPU device, the model, the data and the run). Both sides import these types, so a
 * message the other side does not understand is a type error.
 */
import type { BuiltinReward, FieldError, RunSettings } from "./settings.ts";

/** A file as picked or dropped: its path inside the chosen folder, and the File itself. */
export interface PickedFile {
  path: string;
  file: File;
}

/** What the page shows about the model. */
export interface ModelInfo {
  source: string;
  modelType: string;
  layers: number;
  hidden: number;
  vocab: number;
  maxPositions: number;
  parameters: number;
  /** dtype of the weights as they came (float32, bfloat16, float16): the download keeps it. */
  dtype: string;
  /** Estimated GPU memory for training (weights, gradients, AdamW state, reference, critic). */
  trainingBytes: number;
  /** Largest tensor as f32 on the GPU. */
  largestTensor: { name: string; bytes: number };
}

/** What the page shows about the prompts. */
export interface DataInfo {
  source: string;
  train: number;
  val: number;
  dataSources: string[];
  /** The first held-out prompt as the model sees it (chat template applied). */
  example: { prompt: string; groundTruth: string; dataSource: string };
  /** Per built-in reward: an answer it scores above 0 for the example, or null. */
  rewarded: Record<BuiltinReward, string | null>;
  /** Multi-turn tasks: a rewarded conversation for the example (role, text as rendered). */
  conversation?: { role: string; content: string }[];
}

export interface AdapterInfo {
  name: string;
  f16: boolean;
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
}

/** A run kept in the browser's storage (OPFS). */
export interface SavedRunInfo {
  step: number;
  totalSteps: number;
  savedAt: string;
  settings: RunSettings;
  model: string;
  data: string;
}

export interface MetricPoint {
  step: number;
  metrics: Record<string, number>;
}

export interface SampleRow {
  input: string;
  output: string;
  score: number;
  ground_truth: string;
  /** Multi-turn samples: the whole conversation with roles (prompt messages first). */
  messages?: { role: string; content: string }[];
}

/** Page -> worker. */
export type ToWorker =
  /** `failAtStep` makes step N fail (the page test's mid-run failure, URL fail_at_step). */
  | { type: "init"; failAtStep?: number }
  | { type: "check"; settings: RunSettings; id: number }
  | { type: "model"; files: PickedFile[] }
  | { type: "data"; file: PickedFile | null }
  | { type: "start"; settings: RunSettings }
  | { type: "resume-saved" }
  | { type: "discard-saved" }
  | { type: "pause" }
  | { type: "resume" }
  | { type: "stop" }
  | { type: "export" };

/** Why a run ended. */
export type RunEnd = "finished" | "stopped";

/** Worker -> page. */
export type FromWorker =
  | { type: "ready"; adapter: AdapterInfo; model: ModelInfo; data: DataInfo | null }
  | { type: "no-webgpu"; message: string }
  /** `data` describes the built-in task under these settings (null when a file is loaded). */
  | {
    type: "checked";
    id: number;
    errors: FieldError[];
    data: DataInfo | null;
    /** The model a run under these settings starts from (the task's built-in one, or the user's). */
    model: ModelInfo | null;
  }
  | { type: "model"; model: ModelInfo }
  | { type: "model-error"; message: string }
  | { type: "data"; data: DataInfo | null }
  | { type: "data-error"; message: string }
  | { type: "saved"; run: SavedRunInfo | null }
  /** The run did not start: the settings, the data or the model were refused. */
  | { type: "refused"; errors: FieldError[] }
  | { type: "started"; settings: RunSettings; fromStep: number; history: MetricPoint[] }
  | { type: "metrics"; point: MetricPoint }
  | { type: "samples"; kind: "train" | "val"; step: number; rows: SampleRow[] }
  | { type: "log"; line: string }
  /** The run is waiting at the start of `step + 1` (pause took effect). */
  | { type: "paused"; step: number }
  | { type: "running"; step: number }
  | { type: "ended"; how: RunEnd; step: number; checkpointed: boolean }
  | { type: "failed"; message: string; step: number }
  | { type: "zip"; name: string; bytes: Uint8Array };

/** The page's view of a worker: typed postMessage. */
export interface TrainerPort {
  post(msg: ToWorker): void;
}
