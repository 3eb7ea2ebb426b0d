/** Key and type validation of a merged config tree against its schema. */
import { closestKey, ConfigError } from "./errors.ts";
import { verlKeyReason } from "./verl_keys.ts";
import { isMapping } from "./overrides.ts";
import { choicesOf, Field, type Fields, type FieldSpec, Section, walkFields } from "./schema.ts";

/** Every dotted key of a schema, sections included. */
export function knownKeys(root: Section<Fields>): string[] {
  const keys = new Set<string>();
  walkFields(root, (key) => {
    const parts = key.split(".");
    for (let i = 1; i <= parts.length; i++) keys.add(parts.slice(0, i).join("."));
  });
  return [...keys];
}

/** Throws for a key the schema does not know, with a did-you-mean. */
export function unknownKeyError(key: string, root: Section<Fields>, where: string): ConfigError {
  const verl = verlKeyReason(key);
  if (verl) {
    return new ConfigError(key, `config key "${key}"${where} is verl's, not taken: ${verl}`);
  }
  const hint = closestKey(key, knownKeys(root));
  return new ConfigError(
    key,
    `unknown config key "${key}"${where}` + (hint ? `; did you mean "${hint}"?` : ""),
  );
}

/** Rejects keys of `tree` the schema lacks and mappings given where a value belongs. */
export function checkKeys(
  tree: Record<string, unknown>,
  node: Section<Fields>,
  o: { root: Section<Fields>; where: string; prefix?: string },
): void {
  for (const [name, value] of Object.entries(tree)) {
    const key = o.prefix ? `${o.prefix}.${name}` : name;
    if (!Object.hasOwn(node.fields, name)) throw unknownKeyError(key, o.root, o.where);
    const child = node.fields[name];
    if (child instanceof Section) {
      if (!isMapping(value)) {
        throw new ConfigError(
          key,
          `config key "${key}"${o.where} is a section; expected a mapping, got ${show(value)}`,
        );
      }
      checkKeys(value, child, { ...o, prefix: key });
    } else if (child instanceof Field && child.spec.kind !== "map" && isMapping(value)) {
      throw new ConfigError(key, `config key "${key}"${o.where} expects ${expected(child.spec)}`);
    }
  }
}

/**
 * Checks the type and range of every value; the tree must already hold every key. Keys whose
 * value was copied from another (`${a.b}` defaults) are checked last, so a bad value is reported
 * under the key where it was set.
 */
export function checkTypes(
  tree: Record<string, unknown>,
  root: Section<Fields>,
  copied: ReadonlySet<string> = new Set(),
): void {
  const later: [string, FieldSpec][] = [];
  walkFields(root, (key, field) => {
    if (copied.has(key)) later.push([key, field.spec]);
    else checkValue(key, valueAt(tree, key), field.spec);
  });
  for (const [key, spec] of later) checkValue(key, valueAt(tree, key), spec);
  walkFields(root, (key, field) => {
    if (field.spec.derived) checkDerived(tree, key, field.spec);
  });
}

/** A derived key (verl's `${key}` default) must hold its source's value. */
function checkDerived(tree: Record<string, unknown>, key: string, spec: FieldSpec): void {
  const from = (spec.default as { ref: string }).ref;
  const v = valueAt(tree, key), source = valueAt(tree, from);
  if (JSON.stringify(v) === JSON.stringify(source)) return;
  throw new ConfigError(
    key,
    `config key "${key}"=${JSON.stringify(v)} differs from ${from}=${JSON.stringify(source)}: ` +
      `verl derives it from that key; set ${from} instead (or remove ${key})`,
  );
}

function valueAt(tree: Record<string, unknown>, key: string): unknown {
  let value: unknown = tree;
  for (const part of key.split(".")) value = (value as Record<string, unknown>)[part];
  return value;
}

function checkValue(key: string, v: unknown, spec: FieldSpec): void {
  checkKind(key, v, spec);
  if (spec.unsupported === undefined) return;
  const accepted = [spec.default, ...spec.alsoAccepted ?? []].map((a) => JSON.stringify(a));
  if (!accepted.includes(JSON.stringify(v))) {
    const leave = accepted.length === 1
      ? `leave it at ${accepted[0]}`
      : `use ${accepted.join(" or ")}`;
    throw new ConfigError(
      key,
      `config key "${key}"=${JSON.stringify(v)} is not supported: ${spec.unsupported} ` +
        `(${leave} or remove it)`,
    );
  }
}

function checkKind(key: string, v: unknown, spec: FieldSpec): void {
  const fail = (why = "") => {
    throw new ConfigError(
      key,
      `config key "${key}" expects ${expected(spec)}, got ${show(v)}${why}`,
    );
  };
  if (v === null || v === undefined) {
    if (!spec.nullable) fail();
    return;
  }
  switch (spec.kind) {
    case "int":
      if (typeof v === "string" && spec.words?.includes(v)) return;
      if (typeof v !== "number" || !Number.isInteger(v)) fail();
      return checkRange(key, v as number, spec);
    case "float":
      if (typeof v !== "number" || !Number.isFinite(v)) fail();
      return checkRange(key, v as number, spec);
    case "bool":
      if (typeof v !== "boolean") fail();
      return;
    case "str":
      if (typeof v !== "string") fail();
      return;
    case "enum":
      if (typeof v !== "string" || !choicesOf(spec)!.includes(v)) fail();
      return;
    case "paths":
      if (typeof v === "string") return;
      if (!Array.isArray(v) || v.length === 0 || v.some((p) => typeof p !== "string")) fail();
      return;
    case "names":
      if (typeof v === "string" && v !== "") return;
      if (!Array.isArray(v) || v.length === 0 || v.some((p) => typeof p !== "string")) fail();
      return;
    case "map":
      if (!isMapping(v)) fail();
      return;
    case "any":
      return;
    case "list":
      if (!Array.isArray(v)) fail();
      if (spec.length !== undefined && (v as unknown[]).length !== spec.length) {
        fail(` (${(v as unknown[]).length} items)`);
      }
      for (const item of v as unknown[]) {
        if (spec.item === "str") {
          if (typeof item !== "string") fail();
          const names = choicesOf(spec);
          if (names && !names.includes(item as string)) {
            fail(` ("${item}" is not one of ${names.join(", ")})`);
          }
        } else {
          if (typeof item !== "number" || !Number.isFinite(item)) fail();
          checkRange(key, item as number, spec);
        }
      }
  }
}

function checkRange(key: string, v: number, spec: FieldSpec): void {
  if ((spec.min !== undefined && v < spec.min) || (spec.max !== undefined && v > spec.max)) {
    const lo = spec.min ?? "-inf";
    const hi = spec.max ?? "inf";
    throw new ConfigError(key, `config key "${key}" must lie in [${lo}, ${hi}], got ${v}`);
  }
}

/** Human description of what a field accepts. */
export function expected(spec: FieldSpec): string {
  const base = {
    int: spec.words ? `an integer or ${spec.words.join(", ")}` : "an integer",
    float: "a number",
    bool: "a boolean (true/false)",
    str: "a string",
    enum: `one of ${choicesOf(spec)?.join(", ")}`,
    paths: "a path or a list of paths",
    names: "a name or a list of names",
    map: "a mapping",
    any: "any value",
    list: `a list of ${spec.item === "str" ? "strings" : "numbers"}` +
      (spec.choices ? ` from ${choicesOf(spec)!.join(", ")}` : "") +
      (spec.length !== undefined ? ` with ${spec.length} items` : ""),
  }[spec.kind];
  return spec.nullable ? `${base} or null` : base;
}

function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (v === undefined) return "nothing";
  return `${JSON.stringify(v)} (${Array.isArray(v) ? "list" : v === null ? "null" : typeof v})`;
}
