/**
 * Building blocks of a config schema: every key is a `Field` with a kind, a default and a doc
 * string, grouped into `Section`s. The TypeScript type of a resolved config is derived from the
 * schema (`Infer`), so the schema is the only place where a key is declared.
 */

/** The value kinds a config key can hold. */
export type FieldKind =
  | "int"
  | "float"
  | "bool"
  | "str"
  | "enum"
  | "list"
  | "paths"
  | "names"
  | "map"
  | "any";

/** A default that copies another key, written `${a.b.c}` as OmegaConf does in verl's YAML. */
export interface Ref {
  readonly ref: string;
}

/** Everything the loader needs to know about one key. */
export interface FieldSpec {
  kind: FieldKind;
  doc: string;
  default: unknown;
  nullable: boolean;
  /**
   * Allowed values of an `enum`, or of each item of a `list`: a fixed list, or a registry whose
   * names are read when a config is validated (so a name registered by a user module counts).
   */
  choices?: Choices;
  /** Item kind of a `list`. */
  item?: "str" | "int" | "float";
  min?: number;
  max?: number;
  /** Whether a string value names a file or folder that must exist. */
  isPath?: boolean;
  /** Exact length of a `list` (e.g. Adam betas). */
  length?: number;
  /**
   * A verl key we accept only at its default: any other value is an error carrying this text
   * (what is missing and what to do instead), so no setting is silently ignored.
   */
  unsupported?: string;
  /** Values accepted besides the default of an `unsupported` key (they describe what runs here). */
  alsoAccepted?: readonly unknown[];
  /**
   * A verl key of a feature switched off here: any value is accepted and nothing reads it, as in
   * verl while the switch (this dotted key, an `unsupported` key pinned at its off value) is off.
   */
  inertWhile?: string;
  /** A key verl derives from its `${...}` default: any other value is refused naming that key. */
  derived?: boolean;
  /** Words an `int` key also takes (verl's SFT `save_freq: after_each_epoch`). */
  words?: readonly string[];
}

/** Anything that lists valid names, such as a `Registry` of estimators or loggers. */
export interface NameSource {
  names(): readonly string[];
}

export type Choices = readonly string[] | NameSource;

/** The allowed names of a field right now. */
export function choicesOf(spec: FieldSpec): readonly string[] | undefined {
  const c = spec.choices;
  if (c === undefined) return undefined;
  return "names" in c && typeof c.names === "function" ? c.names() : c as readonly string[];
}

/** One config key; `T` is the type of its resolved value. */
export class Field<T> {
  declare readonly __type?: T;
  constructor(readonly spec: FieldSpec) {}

  /**
   * The same key, accepted only at its default (and at `also`, values that describe the same
   * behaviour here); another value is refused with `why`.
   */
  unsupported(why: string, also?: readonly T[]): Field<T> {
    return new Field<T>({ ...this.spec, unsupported: why, alsoAccepted: also });
  }

  /** The same key, inert: verl reads it only while `switchKey` is on, and here it is always off. */
  inertWhile(switchKey: string): Field<T> {
    return new Field<T>({ ...this.spec, inertWhile: switchKey });
  }

  /** The same key, pinned to its `${key}` default: verl derives it from that key. */
  derived(): Field<T> {
    if (!isRef(this.spec.default)) throw new Error("derived() needs a ref() default");
    return new Field<T>({ ...this.spec, derived: true });
  }

  /** The same key, also accepting `null` (keeps the current default). */
  orNull(): Field<T | null> {
    return new Field<T | null>({ ...this.spec, nullable: true });
  }
}

/** A mapping of keys to fields or nested sections. */
export type Fields = { readonly [key: string]: Field<unknown> | Section<Fields> };

/** A nested group of keys, such as `actor_rollout_ref.actor`. */
export class Section<F extends Fields> {
  constructor(readonly doc: string, readonly fields: F) {}
}

/** The resolved value type of a field or section. */
export type Infer<S> = S extends Field<infer T> ? T
  : S extends Section<infer F> ? { -readonly [K in keyof F]: Infer<F[K]> }
  : never;

/** A named schema plus the cross-key checks that run after type validation. */
export interface ConfigSchema<S extends Section<Fields> = Section<Fields>> {
  name: string;
  /** First lines of the generated YAML file. */
  title: string;
  root: S;
  /** Cross-key rules; throw `ConfigError` naming the keys. */
  check?: (cfg: Infer<S>) => void;
  /** Keys rewritten after loading, e.g. a deprecated alias copied onto its successor. */
  normalize?: (cfg: Infer<S>) => void;
  /** Path keys checked only when a predicate on the config holds. */
  conditionalPaths?: { key: string; when: (cfg: Infer<S>) => boolean }[];
}

/** Builds a `${key}` default. */
export function ref(key: string): Ref {
  return { ref: key };
}

/** True for a `${key}` default. */
export function isRef(v: unknown): v is Ref {
  return typeof v === "object" && v !== null && !Array.isArray(v) &&
    typeof (v as Ref).ref === "string" && Object.keys(v).length === 1;
}

interface NumOpts {
  min?: number;
  max?: number;
}

function make<T>(spec: Omit<FieldSpec, "nullable">): Field<T> {
  return new Field<T>({ ...spec, nullable: spec.default === null });
}

/** An integer key. A `null` default makes the key nullable. */
export function int(def: null, doc: string, o?: NumOpts): Field<number | null>;
export function int(def: number | Ref, doc: string, o?: NumOpts): Field<number>;
export function int(def: number | Ref | null, doc: string, o: NumOpts = {}) {
  return make({ kind: "int", default: def, doc, ...o });
}

/** An integer key that also takes the given words, e.g. verl's `after_each_epoch`. */
export function intOrWord<const W extends string>(
  def: number,
  words: readonly W[],
  doc: string,
  o: NumOpts = {},
): Field<number | W> {
  return make({ kind: "int", default: def, doc, words, ...o });
}

/** A floating-point key (integers are accepted). */
export function float(def: null, doc: string, o?: NumOpts): Field<number | null>;
export function float(def: number | Ref, doc: string, o?: NumOpts): Field<number>;
export function float(def: number | Ref | null, doc: string, o: NumOpts = {}) {
  return make({ kind: "float", default: def, doc, ...o });
}

/** A boolean key. */
export function bool(def: null, doc: string): Field<boolean | null>;
export function bool(def: boolean | Ref, doc: string): Field<boolean>;
export function bool(def: boolean | Ref | null, doc: string) {
  return make({ kind: "bool", default: def, doc });
}

/** A string key; `isPath` makes the loader check that it exists. */
export function str(def: null, doc: string, o?: { isPath?: boolean }): Field<string | null>;
export function str(def: string | Ref, doc: string, o?: { isPath?: boolean }): Field<string>;
export function str(def: string | Ref | null, doc: string, o: { isPath?: boolean } = {}) {
  return make({ kind: "str", default: def, doc, ...o });
}

/** A string restricted to `choices`: a fixed list (typed by its literals) or a registry. */
export function oneOf<const C extends readonly string[]>(
  choices: C,
  def: C[number] | Ref,
  doc: string,
): Field<C[number]>;
export function oneOf(choices: NameSource, def: string | Ref, doc: string): Field<string>;
export function oneOf(choices: Choices, def: string | Ref, doc: string): Field<string> {
  return make({ kind: "enum", default: def, doc, choices });
}

/** Like `oneOf` with a `null` default. */
export function oneOfOrNull<const C extends readonly string[]>(
  choices: C,
  doc: string,
): Field<C[number] | null> {
  return make({ kind: "enum", default: null, doc, choices });
}

/** A list of strings, optionally restricted to `choices` (a fixed list or a registry). */
export function strList(
  def: string[],
  doc: string,
  o: { choices?: Choices } = {},
): Field<string[]> {
  return make({ kind: "list", item: "str", default: def, doc, choices: o.choices });
}

/** A list of numbers, optionally of fixed length. */
export function floatList(
  def: number[],
  doc: string,
  o: NumOpts & { length?: number } = {},
): Field<number[]> {
  return make({ kind: "list", item: "float", default: def, doc, ...o });
}

/** One path or a list of paths (verl accepts both for `data.train_files`); each must exist. */
export function paths(def: string | string[], doc: string): Field<string | string[]> {
  return make({ kind: "paths", default: def, doc, isPath: true });
}

/** A name or a list of names (PEFT's target_modules: `all-linear`, a regex, or module names). */
export function names(def: null, doc: string): Field<string | string[] | null>;
export function names(def: string | string[], doc: string): Field<string | string[]>;
export function names(def: string | string[] | null, doc: string) {
  return make({ kind: "names", default: def, doc });
}

/** Any YAML value: only for inert keys (`inertWhile`), which nothing reads. */
export function anything(def: unknown, doc: string): Field<unknown> {
  return make({ kind: "any", default: def, doc });
}

/** A free-form mapping passed through unchecked (e.g. extra keyword arguments). */
export function map(doc: string): Field<Record<string, unknown>> {
  return make({ kind: "map", default: {}, doc });
}

/** A free-form mapping whose default is null (verl's Optional[dict]). */
export function mapOrNull(doc: string): Field<Record<string, unknown> | null> {
  return make({ kind: "map", default: null, doc });
}

/** A mapping copied from another key's section (`${key}`), or null. */
export function mapOf(def: Ref, doc: string): Field<Record<string, unknown> | null> {
  return new Field({ kind: "map", default: def, doc, nullable: true });
}

/** Groups keys under a doc string. */
export function section<const F extends Fields>(doc: string, fields: F): Section<F> {
  return new Section(doc, fields);
}

/** Visits every field with its dotted key, in declaration order. */
export function walkFields(
  node: Section<Fields>,
  visit: (key: string, field: Field<unknown>) => void,
  prefix = "",
): void {
  for (const [name, child] of Object.entries(node.fields)) {
    const key = prefix ? `${prefix}.${name}` : name;
    if (child instanceof Section) walkFields(child, visit, key);
    else visit(key, child);
  }
}

/** Looks a dotted key up in the schema; returns the field, the section, or undefined. */
export function lookup(
  root: Section<Fields>,
  key: string,
): Field<unknown> | Section<Fields> | undefined {
  let node: Field<unknown> | Section<Fields> = root;
  for (const part of key.split(".")) {
    if (!(node instanceof Section) || !Object.hasOwn(node.fields, part)) return undefined;
    node = node.fields[part];
  }
  return node;
}

/** The tree of raw defaults (refs written as `${key}` strings), a fresh copy each call. */
export function rawDefaults(node: Section<Fields>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, child] of Object.entries(node.fields)) {
    if (child instanceof Section) out[name] = rawDefaults(child);
    else out[name] = defaultText(child.spec.default);
  }
  return out;
}

function defaultText(v: unknown): unknown {
  if (isRef(v)) return `\${${v.ref}}`;
  return structuredClone(v);
}
