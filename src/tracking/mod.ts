export { ConsoleLogger, FileLogger, type Logger, Progress, Tracking } from "./loggers.ts";
export { crc32c, readRecords, TensorBoardWriter } from "./tensorboard.ts";
import { ConsoleLogger, FileLogger, type Logger, Tracking } from "./loggers.ts";
import { TensorBoardWriter } from "./tensorboard.ts";

/** Builds verl's `trainer.logger` list: console, file (JSONL) and tensorboard. */
export function createTracking(
  names: string[],
  options: { dir: string; projectName: string; experimentName: string },
): Tracking {
  const base = `${options.dir}/${options.projectName}/${options.experimentName}`;
  const loggers: Logger[] = names.map((name) => {
    switch (name) {
      case "console":
        return new ConsoleLogger();
      case "file":
        return new FileLogger(`${base}/metrics.jsonl`);
      case "tensorboard": {
        const w = new TensorBoardWriter(`${base}/tensorboard`);
        return { log: (s, m) => w.log(s, m), close: () => w.close() };
      }
      default:
        throw new Error(
          `trainer.logger: unknown logger "${name}" (valid: console, file, tensorboard)`,
        );
    }
  });
  return new Tracking(loggers);
}
