/**
 * verl's interaction YAML (`multi_turn.interaction_config_path`):
 *
 *   interaction:
 *     - name: gsm8k            # optional: default from the class name (Gsm8kInteraction -> gsm8k)
 *       class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction   # or ./my_user.ts[:Class]
 *       config: {}
 *
 * A row picks its interaction by `interaction_kwargs.name`. A `class_name` ending in
 * .ts/.js/.mjs/.mts (with an optional `:ExportName`) is a user module, found relative to the YAML
 * file's folder and run sandboxed (user_interaction.ts).
 */
import { basename, dirname, isAbsolute, resolve } from "node:path";
import { parse } from "yaml";
import { type AgentInteraction, BUILTIN_INTERACTIONS } from "./interaction.ts";
import { UserInteraction } from "./user_interaction.ts";

const MODULE = /^(.*\.(?:ts|js|mjs|mts))(?::([A-Za-z_$][\w$]*))?$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** verl's default name: the class's last dotted part without "Interaction", lower-cased. */
export function defaultInteractionName(className: string): string {
  const m = MODULE.exec(className);
  const base = m ? m[2] ?? basename(m[1]).replace(/\.\w+$/, "") : className.split(".").at(-1)!;
  return (base.endsWith("Interaction") ? base.slice(0, -"Interaction".length) : base)
    .toLowerCase();
}

/** Builds the interactions of a parsed interaction YAML; `file` names it in errors. */
export async function interactionsFromConfig(
  doc: unknown,
  file: string,
): Promise<AgentInteraction[]> {
  const list = isObject(doc) ? doc.interaction : undefined;
  if (!Array.isArray(list)) {
    throw new Error(
      `${file}: expected a top-level "interaction:" list of {name, class_name, config}`,
    );
  }
  const out: AgentInteraction[] = [];
  try {
    for (const [i, entry] of list.entries()) {
      const at = `${file}: interaction[${i}]`;
      if (!isObject(entry)) throw new Error(`${at}: expected {name, class_name, config}`);
      const cls = entry.class_name;
      if (typeof cls !== "string" || cls === "") {
        throw new Error(`${at}.class_name: expected a string, got ${JSON.stringify(cls)}`);
      }
      const config = entry.config ?? {};
      if (!isObject(config)) throw new Error(`${at}.config: expected a mapping`);
      const name = entry.name ?? defaultInteractionName(cls);
      if (typeof name !== "string" || name === "") {
        throw new Error(`${at}.name: expected a non-empty string, got ${JSON.stringify(name)}`);
      }
      if (out.some((x) => x.name === name)) {
        throw new Error(`${at}.name=${name}: a second interaction with this name`);
      }
      const builtin = Object.hasOwn(BUILTIN_INTERACTIONS, cls) ? BUILTIN_INTERACTIONS[cls] : null;
      const m = MODULE.exec(cls);
      if (builtin) out.push(builtin.make(name, config));
      else if (m) {
        const path = isAbsolute(m[1]) ? m[1] : resolve(dirname(file), m[1]);
        out.push(await UserInteraction.load({ path, exportName: m[2] ?? null }, name, config, at));
      } else {
        throw new Error(
          `${at}.class_name=${cls}: not a built-in interaction (${
            Object.keys(BUILTIN_INTERACTIONS).join(", ")
          }) nor a .ts/.js module path`,
        );
      }
    }
  } catch (e) {
    for (const x of out) x.close?.();
    throw e;
  }
  return out;
}

/** Reads and builds the interactions of an interaction YAML file. */
export async function loadInteractionConfig(path: string): Promise<AgentInteraction[]> {
  let doc: unknown;
  try {
    doc = parse(await Deno.readTextFile(path));
  } catch (e) {
    throw new Error(`multi_turn.interaction_config_path=${path}: ${(e as Error).message}`);
  }
  return await interactionsFromConfig(doc, path);
}
