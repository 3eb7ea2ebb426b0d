/** Command-line overrides `a.b.c=value`, parsed like Hydra's (values are YAML scalars). */
import { parse } from "yaml";
import { ConfigError } from "./errors.ts";

/** One parsed override. */
export interface Override {
  key: string;
  value: unknown;
  /** The text as given, for error messages. */
  source: string;
}

/**
 * Parses `a.b.c=v`. The value is read as a YAML flow scalar or collection, so `16`, `1e-6`,
 * `true`, `null`, `[a,b]` and `'quoted'` mean what they do in the config file; an empty value is
 * the empty string (as in Hydra). A leading `+` or `++` (Hydra's add/force-add) is accepted so
 * verl command lines work, but the key must still exist in the schema.
 */
export function parseOverride(arg: string): Override {
  const eq = arg.indexOf("=");
  if (eq <= 0) {
    throw new ConfigError(arg, `override "${arg}" is not of the form key.path=value`);
  }
  const key = arg.slice(0, eq).trim().replace(/^\+{1,2}/, "");
  if (!/^[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*$/.test(key)) {
    throw new ConfigError(key, `override "${arg}": "${key}" is not a dotted key`);
  }
  const text = arg.slice(eq + 1);
  if (text.trim() === "") return { key, value: "", source: arg };
  let value: unknown;
  try {
    value = parse(text);
  } catch (e) {
    throw new ConfigError(key, `override "${arg}": cannot parse value: ${(e as Error).message}`);
  }
  return { key, value, source: arg };
}

/** Sets `value` at a dotted key, creating intermediate mappings. */
export function setDotted(tree: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split(".");
  let node = tree;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (!isMapping(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
}

/** Reads the value at a dotted key, or undefined. */
export function getDotted(tree: unknown, key: string): unknown {
  let node = tree;
  for (const part of key.split(".")) {
    if (!isMapping(node) || !Object.hasOwn(node, part)) return undefined;
    node = node[part];
  }
  return node;
}

/** A plain YAML mapping (not a list, not null). */
export function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Merges `src` into `dst`: mappings merge key by key, anything else replaces. */
export function deepMerge(dst: Record<string, unknown>, src: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(src)) {
    if (isMapping(v) && isMapping(dst[k])) deepMerge(dst[k] as Record<string, unknown>, v);
    else dst[k] = structuredClone(v);
  }
}
