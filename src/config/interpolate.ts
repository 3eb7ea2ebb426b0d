/**
 * OmegaConf-style references between keys, as verl's YAML writes them: `${a.b.c}`, relative
 * `${.sibling}` / `${..uncle}`, and `${oc.select:a.b.c,default}` (the key's value when it exists,
 * else the default, read as a YAML scalar; no default means null).
 */
import { parse } from "yaml";
import { ConfigError } from "./errors.ts";
import { getDotted, isMapping } from "./overrides.ts";

const WHOLE = /^\$\{([^}]+)\}$/;
const PART = /\$\{([^}]+)\}/g;
const SELECT = "oc.select:";

/** What a `${...}` body names: the key it reads, and for oc.select what stands in when absent. */
interface Reference {
  key: string;
  select: boolean;
  fallback: unknown;
}

/**
 * The absolute key of a reference written at `at` (the dotted key holding it): `.x` is a sibling
 * of `at`, each further dot climbs one level, as in OmegaConf.
 */
export function absoluteKey(ref: string, at: string): string {
  const dots = /^\.*/.exec(ref)![0].length;
  if (dots === 0) return ref;
  const parent = at.split(".").slice(0, -1);
  const up = dots - 1;
  if (up > parent.length) {
    throw new ConfigError(at, `config key "${at}": "\${${ref}}" climbs above the root`);
  }
  return [...parent.slice(0, parent.length - up), ref.slice(dots)].filter((p) => p).join(".");
}

/** Parses a `${...}` body written at `at`. */
export function parseReference(body: string, at: string): Reference {
  const text = body.trim();
  if (!text.startsWith(SELECT)) {
    return { key: absoluteKey(text, at), select: false, fallback: null };
  }
  const rest = text.slice(SELECT.length);
  const comma = rest.indexOf(",");
  const key = (comma < 0 ? rest : rest.slice(0, comma)).trim();
  let fallback: unknown = null;
  if (comma >= 0) {
    const raw = rest.slice(comma + 1).trim();
    try {
      fallback = raw === "" ? "" : parse(raw);
    } catch (e) {
      throw new ConfigError(
        at,
        `config key "${at}": cannot read the default of "\${${text}}": ${(e as Error).message}`,
      );
    }
  }
  return { key: absoluteKey(key, at), select: true, fallback };
}

/**
 * Replaces references in place. A value that is exactly `${...}` takes the referenced value with
 * its type (so `response_length: ${data.max_response_length}` stays an integer, and a section is
 * copied whole); a reference inside a longer string is substituted as text. Returns the keys
 * whose whole value was copied from another key, so that checks can blame the key the user
 * actually set.
 */
export function resolveRefs(tree: Record<string, unknown>): Set<string> {
  const resolving = new Set<string>();
  const copied = new Set<string>();

  const resolveKey = (ref: Reference, from: string, body: string): unknown => {
    const { key } = ref;
    if (resolving.has(key)) {
      throw new ConfigError(from, `config key "${from}": reference cycle through "${key}"`);
    }
    const value = getDotted(tree, key);
    if (value === undefined) {
      if (ref.select) return structuredClone(ref.fallback);
      throw new ConfigError(from, `config key "${from}" refers to unknown key "\${${body}}"`);
    }
    resolving.add(key);
    let out: unknown;
    if (isMapping(value)) {
      walk(value, key);
      out = structuredClone(value);
    } else {
      out = resolveValue(value, key);
      setAt(key, out);
    }
    resolving.delete(key);
    return out;
  };

  const resolveValue = (value: unknown, at: string): unknown => {
    if (typeof value !== "string" || !value.includes("${")) return value;
    const whole = WHOLE.exec(value);
    if (whole) {
      copied.add(at);
      const out = resolveKey(parseReference(whole[1], at), at, whole[1]);
      return Array.isArray(out) ? structuredClone(out) : out;
    }
    return value.replace(PART, (_, body: string) => {
      const v = resolveKey(parseReference(body, at), at, body);
      if (isMapping(v) || Array.isArray(v)) {
        throw new ConfigError(at, `config key "${at}": "\${${body}}" is not a scalar`);
      }
      return String(v);
    });
  };

  const setAt = (key: string, value: unknown) => {
    const parts = key.split(".");
    const parent = getDotted(tree, parts.slice(0, -1).join(".")) ?? tree;
    (parts.length === 1 ? tree : parent as Record<string, unknown>)[parts.at(-1)!] = value;
  };

  const walk = (node: Record<string, unknown>, prefix: string) => {
    for (const [k, v] of Object.entries(node)) {
      const key = prefix ? `${prefix}.${k}` : k;
      if (isMapping(v)) walk(v, key);
      else if (Array.isArray(v)) node[k] = v.map((item) => resolveValue(item, key));
      else node[k] = resolveValue(v, key);
    }
  };
  walk(tree, "");
  return copied;
}
