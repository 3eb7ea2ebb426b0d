/** Runs a CLI entry point: a failure prints one clear line (no stack unless DEBUG) and exits 1. */
export async function runCli(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (e) {
    const err = e as Error;
    console.error(`error: ${err.message}`);
    if (Deno.env.get("DEBUG")) console.error(err.stack);
    Deno.exit(1);
  }
  Deno.exit(0);
}
