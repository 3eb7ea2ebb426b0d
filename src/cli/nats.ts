/**
 * `deno task nats [--port 4222] [--ws-port 8080] [--host 127.0.0.1] [--dir .nats]
 * [--prefix webrl.<project>.<experiment>]`: starts Debian's nats-server with JetStream and
 * WebSocket for one run, with the configuration of src/distributed/server_config.ts (written to
 * <dir>/nats-server.conf), and prints the nkey seeds of the trainer and of the workers.
 */
import { parseArgs } from "node:util";
import { defaultPrefix, startNatsServer } from "../distributed/mod.ts";
import { runCli } from "./run.ts";

const USAGE = `usage: deno task nats [--port 4222] [--ws-port 8080] [--host 127.0.0.1]
  [--dir .nats] [--prefix ${defaultPrefix("webrl_examples", "arithmetic")}]`;

export async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: "string", default: "4222" },
      "ws-port": { type: "string", default: "8080" },
      host: { type: "string", default: "127.0.0.1" },
      dir: { type: "string", default: ".nats" },
      prefix: { type: "string" },
    },
  });
  const prefix = values.prefix ?? defaultPrefix("webrl_examples", "arithmetic");
  const server = await startNatsServer({
    prefix,
    dir: values.dir,
    host: values.host,
    port: Number(values.port),
    wsPort: Number(values["ws-port"]),
    verbose: true,
  });
  console.log(`nats-server: ${server.url} and ${server.wsUrl} (config ${server.configPath})`);
  console.log(
    `trainer:  NATS_NKEY_SEED=${server.trainerSeed} deno task train ... ` +
      `distributed.backend=nats distributed.url=${server.url}`,
  );
  console.log(
    `worker:   NATS_NKEY_SEED=${server.workerSeed} deno task worker --url ${server.url} ` +
      `--prefix ${prefix}`,
  );
  const stop = async () => {
    await server.stop();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await new Promise(() => {});
}

if (import.meta.main) await runCli("nats", () => main(Deno.args), { usage: USAGE });
