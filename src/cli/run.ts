/** What every entry point shares: argument splitting and one way to fail. */
import { ConfigError } from "../config/mod.ts";
import { DataError } from "../data/mod.ts";

/** `a.yaml b.yml key=value ...` -> YAML files and dotted overrides; anything else is an error. */
export function splitArgs(args: string[]): { files: string[]; overrides: string[] } {
  const files = args.filter((a) => !a.includes("=") && /\.ya?ml$/.test(a));
  const overrides = args.filter((a) => a.includes("="));
  const unknown = args.filter((a) => !files.includes(a) && !overrides.includes(a));
  if (unknown.length) {
    throw new ConfigError(
      unknown[0],
      `unexpected argument(s) ${unknown.join(" ")}: give YAML files and key=value overrides`,
    );
  }
  return { files, overrides };
}

export interface RunCliOptions {
  /** Printed for --help / -h and after a config error. */
  usage?: string;
  /** Exit status for a failure; default 2 for bad config or data, 1 otherwise. */
  exitCode?: (e: unknown) => number;
}

/**
 * Runs an entry point: a failure prints `name: message` (the stack only when DEBUG is set) and
 * exits non-zero; success exits 0 (workers and GPU handles do not keep the process alive).
 */
export async function runCli(
  name: string,
  main: () => Promise<unknown>,
  options: RunCliOptions = {},
): Promise<void> {
  if (options.usage && (Deno.args.includes("--help") || Deno.args.includes("-h"))) {
    console.log(options.usage);
    Deno.exit(0);
  }
  try {
    await main();
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    console.error(`${name}: ${err.message}`);
    if (Deno.env.get("DEBUG")) console.error(err.stack);
    if (options.usage && e instanceof ConfigError) console.error(options.usage);
    const known = e instanceof ConfigError || e instanceof DataError;
    Deno.exit(options.exitCode?.(e) ?? (known ? 2 : 1));
  }
  Deno.exit(0);
}
