/**
 * Starts Debian's `nats-server` (Deno only) with the run's configuration from server_config.ts:
 * JetStream in a folder, WebSocket, fresh nkeys for the trainer and the workers. Used by
 * `deno task nats` and by the tests (loopback, free ports).
 */
import { createUser } from "@nats-io/nkeys";
import { serverConfig } from "./server_config.ts";

export interface NatsServer {
  url: string;
  /** ws:// URL for browser workers, or null. */
  wsUrl: string | null;
  /** nkey seeds (SU...) of the trainer's and the workers' users. */
  trainerSeed: string;
  workerSeed: string;
  configPath: string;
  /** Kills the server (SIGKILL with `hard`) and waits for it to exit. */
  stop(hard?: boolean): Promise<void>;
}

export interface StartOptions {
  prefix: string;
  /** Folder for the config file and JetStream's store; default a fresh temp folder. */
  dir?: string;
  host?: string;
  /** 0 or absent = a free port. */
  port?: number;
  /** null = no WebSocket; 0 or absent = a free port. */
  wsPort?: number | null;
  /** The binary; default `nats-server` on the PATH. */
  binary?: string;
  /** Keep the server's log on stderr (default: discarded). */
  verbose?: boolean;
}

/** Whether `nats-server` (or the given binary) can be run. */
export async function natsServerAvailable(binary = "nats-server"): Promise<boolean> {
  try {
    const out = await new Deno.Command(binary, { args: ["--version"], stdout: "null" }).output();
    return out.success;
  } catch {
    return false;
  }
}

/** A port nothing listens on right now. */
export function freePort(host = "127.0.0.1"): number {
  const l = Deno.listen({ hostname: host, port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function waitForPort(host: string, port: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (true) {
    try {
      (await Deno.connect({ hostname: host, port })).close();
      return;
    } catch (e) {
      if (Date.now() > until) {
        throw new Error(`nats-server did not listen on ${host}:${port}: ${e}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Starts nats-server and waits until it accepts connections. */
export async function startNatsServer(o: StartOptions): Promise<NatsServer> {
  const host = o.host ?? "127.0.0.1";
  const dir = o.dir ?? await Deno.makeTempDir({ prefix: "webrl_nats_" });
  await Deno.mkdir(`${dir}/jetstream`, { recursive: true });
  const port = o.port || freePort(host);
  const wsPort = o.wsPort === null ? null : o.wsPort || freePort(host);
  const trainer = createUser(), worker = createUser();
  const text = serverConfig({
    host,
    port,
    wsPort,
    storeDir: `${dir}/jetstream`,
    prefix: o.prefix,
    trainerNkey: trainer.getPublicKey(),
    workerNkey: worker.getPublicKey(),
  });
  const configPath = `${dir}/nats-server.conf`;
  await Deno.writeTextFile(`${configPath}.tmp`, text);
  await Deno.rename(`${configPath}.tmp`, configPath);
  const binary = o.binary ?? "nats-server";
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(binary, {
      args: ["-c", configPath],
      stdout: o.verbose ? "inherit" : "null",
      stderr: o.verbose ? "inherit" : "null",
    }).spawn();
  } catch (e) {
    throw new Error(
      `cannot run ${binary} (${(e as Error).message}); install it (Debian: apt-get install ` +
        "nats-server) or point distributed.url at a running server",
    );
  }
  const status = child.status;
  await Promise.race([
    waitForPort(host, port, 10_000),
    status.then((s) => {
      throw new Error(`nats-server exited with code ${s.code}; config ${configPath}`);
    }),
  ]);
  const dec = new TextDecoder();
  return {
    url: `nats://${host}:${port}`,
    wsUrl: wsPort === null ? null : `ws://${host}:${wsPort}`,
    trainerSeed: dec.decode(trainer.getSeed()),
    workerSeed: dec.decode(worker.getSeed()),
    configPath,
    stop: async (hard = false) => {
      try {
        child.kill(hard ? "SIGKILL" : "SIGTERM");
      } catch { /* already gone */ }
      await status;
    },
  };
}
