/**
 * Test helpers: a real nats-server on loopback (free ports, a fresh store) and the tiny model's
 * weights. Without `nats-server` the tests are skipped with a message, except under CI (env `CI`
 * set), where a missing server is a failure.
 */
import { readModelFolder, serializeModelConfig, tensorToFloat32 } from "../io/mod.ts";
import { type NatsServer, natsServerAvailable, startNatsServer } from "./server.ts";

export const TINY = new URL("../../assets/tiny_arith", import.meta.url).pathname;

let warned = false, guarded = false;

/**
 * @nats-io/transport-node removes its socket listeners when a connection closes (or a connect is
 * refused) before the socket is gone; a reset from the server in that window (a refused nkey, a
 * server stopped by the test) surfaces as an uncaught ECONNRESET of a connection nobody uses any
 * more. A test process ignores exactly that error (installed by natsTestsEnabled, tests only).
 */
function ignoreClosedSocketResets(): void {
  if (guarded) return;
  guarded = true;
  globalThis.addEventListener("error", (e) => {
    if (/ECONNRESET/.test(String(e.error?.message ?? e.message))) e.preventDefault();
  });
}

/** Whether the NATS tests can run; fails under CI when nats-server is missing. */
export async function natsTestsEnabled(): Promise<boolean> {
  ignoreClosedSocketResets();
  if (await natsServerAvailable()) return true;
  if (Deno.env.get("CI")) {
    throw new Error(
      "nats-server is missing in CI: .ci/run installs it (apt-get install nats-server)",
    );
  }
  if (!warned) {
    console.warn("SKIPPED: NATS tests need Debian's nats-server (apt-get install nats-server)");
    warned = true;
  }
  return false;
}

/** Runs `fn` against a fresh nats-server and stops it afterwards. */
export async function withServer(
  prefix: string,
  fn: (s: NatsServer) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "webrl_nats_test_" });
  const server = await startNatsServer({ prefix, dir });
  try {
    await fn(server);
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The tiny checkpoint's config text, f32 weights and tokenizer files. */
export async function tinyModel(): Promise<{
  modelConfig: string;
  tensors: Map<string, Float32Array>;
  tokenizerFiles: Record<string, string>;
}> {
  const folder = await readModelFolder(TINY);
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of folder.tensors) tensors.set(name, tensorToFloat32(t));
  return {
    modelConfig: serializeModelConfig(folder.config),
    tensors,
    tokenizerFiles: folder.tokenizerFiles,
  };
}
