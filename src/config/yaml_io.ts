/** YAML out: the commented defaults file of a schema, and resolved configs for logs/checkpoints. */
import { stringify } from "yaml";
import { loadConfig } from "./load.ts";
import {
  type ConfigSchema,
  type Fields,
  type FieldSpec,
  Infer,
  rawDefaults,
  Section,
} from "./schema.ts";

/**
 * The schema as a YAML document: every key with its default and its doc as a comment above it.
 * configs/*.yaml are this text; config_test.ts checks they stay in sync.
 */
export function schemaToYaml(schema: ConfigSchema): string {
  const lines = wrap(schema.title, "# ");
  lines.push(`# Generated from src/config/ (deno run -A src/config/gen_yaml.ts).`);
  lines.push("");
  emit(schema.root, rawDefaults(schema.root), 0, lines);
  return lines.join("\n") + "\n";
}

function emit(
  node: Section<Fields>,
  values: Record<string, unknown>,
  depth: number,
  out: string[],
) {
  const pad = "  ".repeat(depth);
  for (const [name, child] of Object.entries(node.fields)) {
    const doc = child instanceof Section ? child.doc : fieldDoc(child.spec);
    if (depth === 0 && out.at(-1) !== "") out.push("");
    out.push(...wrap(doc, `${pad}# `));
    if (child instanceof Section) {
      out.push(`${pad}${name}:`);
      emit(child, values[name] as Record<string, unknown>, depth + 1, out);
    } else {
      out.push(`${pad}${name}: ${scalar(values[name])}`);
    }
  }
}

/** A key's comment: its doc, and what else than its default is refused or ignored and why. */
function fieldDoc(spec: FieldSpec): string {
  if (spec.unsupported) {
    const also = spec.alsoAccepted?.length
      ? ` Also accepted: ${spec.alsoAccepted.map((v) => JSON.stringify(v)).join(", ")}.`
      : "";
    return `${spec.doc}${also} Not supported: ${spec.unsupported}`;
  }
  if (spec.inertWhile) {
    return `${spec.doc} Inert: read only when ${spec.inertWhile} is on, which is refused here.`;
  }
  if (spec.derived) return `${spec.doc} Must equal its default (verl derives it).`;
  return spec.doc;
}

function scalar(v: unknown): string {
  // 1e-6 reads better than 0.000001 and is a float in YAML 1.2.
  if (typeof v === "number" && v !== 0 && Math.abs(v) < 1e-3) return v.toExponential();
  return stringify(v, { flow: true, lineWidth: 0, flowCollectionPadding: false }).trimEnd();
}

function wrap(text: string, prefix: string, width = 100): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    if (line && prefix.length + line.length + 1 + word.length > width) {
      lines.push(prefix + line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) lines.push(prefix + line);
  return lines;
}

/** The resolved config as YAML, printed at start of a run. */
export function formatConfig(cfg: unknown): string {
  return stringify(cfg, { lineWidth: 0 });
}

/** The resolved config as a standalone YAML document (what a checkpoint stores). */
export function configToYaml(cfg: unknown, schema?: ConfigSchema): string {
  const head = schema ? `# Resolved ${schema.name} config.\n` : "";
  return head + stringify(cfg, { lineWidth: 0 });
}

/**
 * Reads a config saved by `configToYaml` back, validating it like any other. Path checks are
 * skipped by default: the files may have moved since the checkpoint was written.
 */
export function configFromYaml<S extends Section<Fields>>(
  schema: ConfigSchema<S>,
  text: string,
  opts: { skipPathChecks?: boolean } = {},
): Infer<S> {
  return loadConfig(schema, { texts: [text], skipPathChecks: opts.skipPathChecks ?? true });
}
