/**
 * Metric sinks selected by `trainer.logger` (console, file, tensorboard), the progress bar, and
 * the TensorBoard event-file writer. A new logger is one file that registers itself plus one
 * import line here.
 */
import "./console.ts";
import "./file.ts";
import "./tensorboard_logger.ts";

export { ConsoleLogger } from "./console.ts";
export { FileLogger } from "./file.ts";
export {
  createTracking,
  type Logger,
  type LoggerFactory,
  type LoggerOptions,
  LOGGERS,
  runDirOf,
  Tracking,
} from "./logger.ts";
export { Progress, type Tick } from "./progress.ts";
export { crc32c, eventStep, readRecords, TensorBoardWriter } from "./tensorboard.ts";
export { type Chart, type Line, renderChart } from "./report/chart.ts";
export { reportCharts } from "./report/charts.ts";
export { decodeEvent, type EventScalar, readEventFile } from "./report/events.ts";
export {
  MetricsNotFound,
  parseJsonl,
  type Point,
  readRunMetrics,
  type RunMetrics,
} from "./report/metrics.ts";
export {
  renderHtml,
  renderRun,
  type RunReport,
  type RunReportOptions,
  writeRunReport,
} from "./report/report.ts";
