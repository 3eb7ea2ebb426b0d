/** Slots of the Int32Array the sandbox host and its worker share (worker_host.ts, sandbox.ts). */
export const SLOT = {
  /** 1 + the batch position of the sample running now; 0 between samples. */
  current: 0,
  /** Samples started so far (the host restarts a sample's clock when it changes). */
  started: 1,
  /** How user code ended the worker: 0 alive, 1 Deno.exit, 2 close(), 3 unload. */
  exited: 2,
  /** The code given to Deno.exit. */
  exitCode: 3,
} as const;

/** Int32 slots to allocate. */
export const SLOTS = 4;
