/** OmegaConf-style `${a.b.c}` references between keys, as verl's YAML uses them. */
import { ConfigError } from "./errors.ts";
import { getDotted, isMapping } from "./overrides.ts";

const WHOLE = /^\$\{([^}]+)\}$/;
const PART = /\$\{([^}]+)\}/g;

/**
 * Replaces references in place. A value that is exactly `${key}` takes the referenced value with
 * its type (so `response_length: ${data.max_response_length}` stays an integer); a reference
 * inside a longer string is substituted as text. Returns the keys whose whole value was copied
 * from another key, so that checks can blame the key the user actually set.
 */
export function resolveRefs(tree: Record<string, unknown>): Set<string> {
  const resolving = new Set<string>();
  const copied = new Set<string>();

  const resolveKey = (key: string, from: string): unknown => {
    if (resolving.has(key)) {
      throw new ConfigError(from, `config key "${from}": reference cycle through "${key}"`);
    }
    const value = getDotted(tree, key);
    if (value === undefined) {
      throw new ConfigError(from, `config key "${from}" refers to unknown key "\${${key}}"`);
    }
    resolving.add(key);
    const out = resolveValue(value, key);
    resolving.delete(key);
    setAt(key, out);
    return out;
  };

  const resolveValue = (value: unknown, at: string): unknown => {
    if (typeof value !== "string" || !value.includes("${")) return value;
    const whole = WHOLE.exec(value);
    if (whole) {
      copied.add(at);
      return resolveKey(whole[1].trim(), at);
    }
    return value.replace(PART, (_, k: string) => {
      const v = resolveKey(k.trim(), at);
      if (isMapping(v) || Array.isArray(v)) {
        throw new ConfigError(at, `config key "${at}": "\${${k}}" is not a scalar`);
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
