/** `tensorboard`: event files under `{run dir}/tensorboard` that TensorBoard reads. */
import { LOGGERS } from "./logger.ts";
import { TensorBoardWriter } from "./tensorboard.ts";

LOGGERS.register("tensorboard", (o) => {
  const w = new TensorBoardWriter(`${o.runDir}/tensorboard`, o);
  return {
    log: (step, metrics) => w.log(step, metrics),
    flush: () => w.flush(),
    close: () => w.close(),
  };
});
