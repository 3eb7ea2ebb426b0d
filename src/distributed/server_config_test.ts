import assert from "node:assert/strict";
import { defaultPrefix } from "./protocol.ts";
import { serverConfig } from "./server_config.ts";

/** configs/nats/local.conf: the default run's configuration, keys to fill in. */
const LOCAL_CONF = new URL("../../configs/nats/local.conf", import.meta.url).pathname;
const LOCAL_OPTIONS = {
  host: "127.0.0.1",
  port: 4222,
  wsPort: 8080,
  storeDir: ".nats/jetstream",
  prefix: defaultPrefix("webrl_examples", "arithmetic"),
  trainerNkey: "UTRAINER_PUBLIC_NKEY_FROM_NK_GEN",
  workerNkey: "UWORKER_PUBLIC_NKEY_FROM_NK_GEN",
};

Deno.test("configs/nats/local.conf is the configuration deno task nats writes", async () => {
  const text = await Deno.readTextFile(LOCAL_CONF);
  assert.equal(
    text,
    serverConfig(LOCAL_OPTIONS),
    "configs/nats/local.conf is stale: deno run -A src/distributed/server_config_test.ts --write",
  );
  assert.match(text, /jetstream \{/);
  assert.match(text, /websocket \{/);
  assert.match(text, /"webrl\.webrl_examples\.arithmetic\.traj"/);
});

if (import.meta.main && Deno.args.includes("--write")) {
  await Deno.writeTextFile(LOCAL_CONF, serverConfig(LOCAL_OPTIONS));
}
