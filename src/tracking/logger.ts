/**
 * Metric sinks (verl's `trainer.logger`): the Logger interface, the registry of logger kinds by
 * name, and the fan-out the trainer writes to. Each kind is one file that registers itself
 * (console.ts, file.ts, tensorboard_logger.ts); mod.ts imports them all.
 */
import { Registry } from "../tensor/mod.ts";
import type { ResumeOptions } from "./resume.ts";

/**
 * A metrics sink: the trainer calls `log` once per step with verl-named scalars (and again at a
 * save step with `timing_s/save_checkpoint`), and `flush` before a checkpoint, so that the metrics
 * a checkpoint covers are on the disk before it is.
 */
export interface Logger {
  log(step: number, metrics: Record<string, number>): void;
  flush?(): void;
  close(): void;
}

/**
 * Where a run's files go: `{dir}/{project_name}/{experiment_name}/`; `resumeStep` cuts files an
 * earlier run left back to the step this run starts from (resume.ts).
 */
export interface LoggerOptions extends ResumeOptions {
  runDir: string;
}

export type LoggerFactory = (options: LoggerOptions) => Logger;

/** Logger kinds by `trainer.logger` name. */
export const LOGGERS: Registry<LoggerFactory> = new Registry("logger");

/** Fans out to several loggers (verl's `trainer.logger` list). */
export class Tracking implements Logger {
  constructor(readonly loggers: Logger[]) {}

  log(step: number, metrics: Record<string, number>): void {
    for (const l of this.loggers) l.log(step, metrics);
  }

  flush(): void {
    for (const l of this.loggers) l.flush?.();
  }

  close(): void {
    for (const l of this.loggers) l.close();
  }
}

/** A run's metrics folder: `{dir}/{project_name}/{experiment_name}`. */
export function runDirOf(o: { dir: string; projectName: string; experimentName: string }): string {
  return `${o.dir}/${o.projectName}/${o.experimentName}`;
}

/** Builds verl's `trainer.logger` list; an unknown name is an error listing the valid ones. */
export function createTracking(
  names: string[],
  options: { dir: string; projectName: string; experimentName: string } & ResumeOptions,
): Tracking {
  const runDir = runDirOf(options);
  const o = { runDir, resumeStep: options.resumeStep, print: options.print };
  return new Tracking(names.map((name) => LOGGERS.get(name)(o)));
}
