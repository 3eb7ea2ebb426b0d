/** `loadConfig`: defaults, then YAML files in order, then dotted overrides, then validation. */
import { existsSync } from "node:fs";
import { parse } from "yaml";
import { ConfigError } from "./errors.ts";
import { resolveRefs } from "./interpolate.ts";
import { deepMerge, getDotted, isMapping, parseOverride, setDotted } from "./overrides.ts";
import { type ConfigByName, type SchemaName, SCHEMAS } from "./registry.ts";
import {
  type ConfigSchema,
  Field,
  type Fields,
  type Infer,
  lookup,
  rawDefaults,
  Section,
  walkFields,
} from "./schema.ts";
import { checkKeys, checkTypes, unknownKeyError } from "./validate.ts";

/**
 * The mapping-valued key (`map` field) a dotted key reaches into, and the entry's path inside
 * it: `custom_reward_function.reward_kwargs.scale` is entry `scale` of `reward_kwargs`.
 */
function mapEntry(
  root: Section<Fields>,
  key: string,
): { field: string; entry: string } | undefined {
  const parts = key.split(".");
  for (let i = parts.length - 1; i > 0; i--) {
    const node = lookup(root, parts.slice(0, i).join("."));
    if (node instanceof Field && node.spec.kind === "map") {
      return { field: parts.slice(0, i).join("."), entry: parts.slice(i).join(".") };
    }
    if (node !== undefined) return undefined;
  }
  return undefined;
}

/** Where the values come from, and what to check. */
export interface LoadOptions {
  /** YAML files merged in order over the defaults. */
  files?: string[];
  /** YAML documents (already read) merged after the files; used to reload a saved config. */
  texts?: string[];
  /** Command-line style `a.b.c=value` overrides applied last. */
  overrides?: string[];
  /** Skip the existence checks of path keys (tests, configs built for another machine). */
  skipPathChecks?: boolean;
}

/** Loads a config by schema name; the result is typed after the schema. */
export function loadConfig<N extends SchemaName>(name: N, opts?: LoadOptions): ConfigByName[N];
/** Loads a config for an explicit schema. */
export function loadConfig<S extends Section<Fields>>(
  schema: ConfigSchema<S>,
  opts?: LoadOptions,
): Infer<S>;
export function loadConfig(schema: SchemaName | ConfigSchema, opts: LoadOptions = {}): unknown {
  const s = typeof schema === "string" ? schemaByName(schema) : schema;
  const tree = rawDefaults(s.root);
  for (const file of opts.files ?? []) {
    let text: string;
    try {
      text = Deno.readTextFileSync(expandHome(file));
    } catch (e) {
      throw new ConfigError(file, `cannot read config file ${file}: ${(e as Error).message}`);
    }
    mergeDocument(tree, text, s, ` in ${file}`);
  }
  for (const [i, text] of (opts.texts ?? []).entries()) {
    mergeDocument(tree, text, s, ` in config text #${i + 1}`);
  }
  for (const arg of opts.overrides ?? []) {
    const o = parseOverride(arg);
    const node = lookup(s.root, o.key);
    const inMap = node === undefined ? mapEntry(s.root, o.key) : undefined;
    if (inMap) {
      // An entry of a mapping-valued key (Hydra's `+data.apply_chat_template_kwargs.x=v`).
      const map = getDotted(tree, inMap.field);
      if (!isMapping(map)) setDotted(tree, inMap.field, {});
      setDotted(getDotted(tree, inMap.field) as Record<string, unknown>, inMap.entry, o.value);
      continue;
    }
    if (node === undefined) throw unknownKeyError(o.key, s.root, ` (override "${arg}")`);
    if (node instanceof Section) {
      if (!isMapping(o.value)) {
        throw new ConfigError(o.key, `override "${arg}": "${o.key}" is a section, not a value`);
      }
      checkKeys(o.value, node, { root: s.root, where: ` (override "${arg}")`, prefix: o.key });
      deepMerge(getDotted(tree, o.key) as Record<string, unknown>, o.value);
    } else {
      setDotted(tree, o.key, o.value);
    }
  }
  const copied = resolveRefs(tree);
  checkTypes(tree, s.root, copied);
  expandPathKeys(tree, s.root);
  const cfg = tree as Infer<typeof s.root>;
  s.normalize?.(cfg);
  s.check?.(cfg);
  if (!opts.skipPathChecks) checkPaths(cfg, s);
  return cfg;
}

/** The schema registered under `name`. */
export function schemaByName(name: string): ConfigSchema {
  if (!Object.hasOwn(SCHEMAS, name)) {
    throw new ConfigError(
      name,
      `unknown config schema "${name}"; known: ${Object.keys(SCHEMAS).join(", ")}`,
    );
  }
  return SCHEMAS[name as SchemaName];
}

function mergeDocument(
  tree: Record<string, unknown>,
  text: string,
  s: ConfigSchema,
  where: string,
): void {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (e) {
    throw new ConfigError(where.slice(4), `invalid YAML${where}: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) return;
  if (!isMapping(doc)) throw new ConfigError(where.slice(4), `config${where} is not a mapping`);
  checkKeys(doc, s.root, { root: s.root, where });
  deepMerge(tree, doc);
}

/** `~/x` -> `$HOME/x`, since verl's example paths start with `~`. */
export function expandHome(path: string): string {
  if (path === "~" || path.startsWith("~/")) {
    const home = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE");
    if (home) return home + path.slice(1);
  }
  return path;
}

function expandPathKeys(tree: Record<string, unknown>, root: Section<Fields>): void {
  walkFields(root, (key, field) => {
    if (!field.spec.isPath) return;
    const v = getDotted(tree, key);
    if (typeof v === "string") setDotted(tree, key, expandHome(v));
    else if (Array.isArray(v)) setDotted(tree, key, v.map((p) => expandHome(p as string)));
  });
}

function checkPaths(cfg: unknown, s: ConfigSchema): void {
  const check = (key: string, v: unknown) => {
    for (const p of typeof v === "string" ? [v] : Array.isArray(v) ? v : []) {
      if (!existsSync(p as string)) {
        throw new ConfigError(key, `config key "${key}": path "${p}" does not exist`);
      }
    }
  };
  walkFields(s.root, (key, field: Field<unknown>) => {
    if (field.spec.isPath) check(key, getDotted(cfg, key));
  });
  for (const c of s.conditionalPaths ?? []) {
    if (c.when(cfg as never)) check(c.key, getDotted(cfg, c.key));
  }
}
