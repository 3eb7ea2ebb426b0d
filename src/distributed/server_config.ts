/**
 * The nats-server configuration of a run: JetStream, WebSocket, and two users authenticated by
 * nkeys: the trainer (everything under the run's prefix and JetStream's API) and the workers,
 * which may only pull jobs from the run's work queue, ack them, read the run's weights stream and
 * run-info bucket and
 * publish trajectories on the run's subject. `configs/nats/local.conf` is this file's output for
 * the default run (a test keeps it current).
 */
import { runNames } from "./protocol.ts";

export interface ServerConfigOptions {
  host: string;
  port: number;
  /** WebSocket port for browser workers; null = no WebSocket listener. */
  wsPort: number | null;
  storeDir: string;
  /** Subject prefix of the run the workers may join. */
  prefix: string;
  /** Public nkeys (U...) of the trainer and of the workers. */
  trainerNkey: string;
  workerNkey: string;
}

const q = (s: string) => JSON.stringify(s);

/** Subjects a worker may publish on (JetStream API calls included) and subscribe to. */
export function workerPermissions(prefix: string): { publish: string[]; subscribe: string[] } {
  const n = runNames(prefix);
  const obj = `OBJ_${n.bucket}`;
  return {
    publish: [
      n.traj,
      "$JS.API.INFO",
      `$JS.API.STREAM.INFO.${n.jobStream}`,
      `$JS.API.CONSUMER.INFO.${n.jobStream}.${n.consumer}`,
      `$JS.API.CONSUMER.MSG.NEXT.${n.jobStream}.${n.consumer}`,
      `$JS.ACK.${n.jobStream}.${n.consumer}.>`,
      `$JS.API.DIRECT.GET.${n.weightStream}`,
      `$JS.API.DIRECT.GET.${n.weightStream}.${n.weights}.>`,
      `$JS.API.STREAM.INFO.${obj}`,
      `$JS.API.STREAM.MSG.GET.${obj}`,
      `$JS.API.DIRECT.GET.${obj}.>`,
      `$JS.API.DIRECT.GET.${obj}`,
      `$JS.API.CONSUMER.CREATE.${obj}.>`,
      `$JS.API.CONSUMER.CREATE.${obj}`,
      `$JS.API.CONSUMER.DELETE.${obj}.>`,
      `$JS.FC.${obj}.>`,
    ],
    subscribe: ["_INBOX.>"],
  };
}

/** nats-server.conf text for one run. */
export function serverConfig(o: ServerConfigOptions): string {
  const w = workerPermissions(o.prefix);
  const list = (xs: string[]) => `[${xs.map(q).join(", ")}]`;
  const lines = [
    `# nats-server configuration of the run with subject prefix ${o.prefix}.`,
    `# Written by deno task nats; start with: nats-server -c <this file>`,
    `host: ${q(o.host)}`,
    `port: ${o.port}`,
    `max_payload: 8MB`,
    `jetstream {`,
    `  store_dir: ${q(o.storeDir)}`,
    `}`,
  ];
  if (o.wsPort !== null) {
    lines.push(`websocket {`, `  host: ${q(o.host)}`, `  port: ${o.wsPort}`, `  no_tls: true`, `}`);
  }
  lines.push(
    `authorization {`,
    `  users: [`,
    `    # the trainer: the whole run and JetStream's API`,
    `    { nkey: ${q(o.trainerNkey)}, permissions: {`,
    `        publish: ${list([`${o.prefix}.>`, "$JS.>", "$O.>", "_INBOX.>"])}`,
    `        subscribe: ${list([`${o.prefix}.>`, "$JS.>", "$O.>", "_INBOX.>"])} } }`,
    `    # rollout workers: pull jobs, read weights, publish trajectories`,
    `    { nkey: ${q(o.workerNkey)}, permissions: {`,
    `        publish: ${list(w.publish)}`,
    `        subscribe: ${list(w.subscribe)} } }`,
    `  ]`,
    `}`,
  );
  return lines.join("\n") + "\n";
}
