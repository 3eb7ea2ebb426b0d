/**
 * Connecting to the NATS server: `nats://` (and `tls://`) over TCP through
 * `@nats-io/transport-node` (Deno runs it through its Node compatibility), `ws://` and `wss://`
 * over WebSocket through `@nats-io/nats-core` (Deno and browsers). Credentials: a token, or an
 * nkey seed (`SU...`), or a `.creds` file's text (user JWT + seed).
 */
import {
  credsAuthenticator,
  type NatsConnection,
  nkeyAuthenticator,
  wsconnect,
} from "@nats-io/nats-core";

export interface NatsCredentials {
  /** distributed.token */
  token?: string | null;
  /** distributed.nkey_seed: an nkey user seed (SU...). */
  nkeySeed?: string | null;
  /** Text of a .creds file (distributed.creds_file, read by the caller). */
  creds?: string | null;
}

export interface ConnectOptions extends NatsCredentials {
  /** Shown in the server's connection list. */
  name?: string;
  /** Milliseconds to wait for the server. Default 20000. */
  timeoutMs?: number;
}

// nats.js keeps the transport of the connection being opened in a module-wide setting: two
// connects of different transports at once would mix them up, so connects run one at a time.
let connecting: Promise<unknown> = Promise.resolve();

/** Opens a connection to `url`; an unreachable server or refused credentials is an error naming it. */
export function connectNats(url: string, o: ConnectOptions = {}): Promise<NatsConnection> {
  const next = connecting.then(() => connectOnce(url, o));
  connecting = next.catch(() => {});
  return next;
}

async function connectOnce(url: string, o: ConnectOptions): Promise<NatsConnection> {
  const enc = new TextEncoder();
  const auth = o.creds
    ? { authenticator: credsAuthenticator(enc.encode(o.creds)) }
    : o.nkeySeed
    ? { authenticator: nkeyAuthenticator(enc.encode(o.nkeySeed)) }
    : o.token
    ? { token: o.token }
    : {};
  const opts = {
    servers: url,
    name: o.name,
    timeout: o.timeoutMs ?? 20_000,
    maxReconnectAttempts: -1,
    ...auth,
  };
  try {
    if (/^wss?:\/\//.test(url)) return await wsconnect(opts);
    if (!/^(nats|tls):\/\//.test(url)) {
      throw new Error("the url must start with nats://, tls://, ws:// or wss://");
    }
    // A variable specifier keeps the TCP transport out of browser bundles.
    const transport = "@nats-io/transport-node";
    const mod = await import(transport) as {
      connect(o: typeof opts): Promise<NatsConnection>;
    };
    return await mod.connect(opts);
  } catch (e) {
    throw new Error(`cannot connect to NATS at ${url}: ${(e as Error).message}`);
  }
}
