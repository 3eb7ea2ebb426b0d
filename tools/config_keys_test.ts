// No config key is accepted and then ignored: every key of every schema is either read by code
// outside the schema files, accepted only at its default (`.unsupported(why)`, refused otherwise),
// pinned to the key verl derives it from (`.derived()`), inert behind a switch that is itself
// refused when on (`.inertWhile(key)`), or can hold only one value. A key nothing reads fails
// here, naming it.
import assert from "node:assert/strict";
import {
  ConfigError,
  type Field,
  loadConfig,
  schemaByName,
  type SchemaName,
  walkFields,
} from "../src/config/mod.ts";
import { stripComments } from "./layers.ts";

const ROOT = new URL("..", import.meta.url).pathname;
// Lists keys by name to compare configs; listing a key is not reading it.
const NOT_READERS = ["src/trainer/checkpoint/config_diff.ts"];

function sources(dir: string): string[] {
  return [...Deno.readDirSync(`${ROOT}${dir}`)].flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory) return rel === "src/testing" ? [] : sources(rel);
    const code = e.name.endsWith(".ts") && !e.name.endsWith("_test.ts") &&
      !e.name.startsWith("test_") && !NOT_READERS.includes(rel);
    return code ? [rel] : [];
  });
}

/** Code that may read config values: everything but the schema declarations themselves. */
function readerText(): string {
  return [...sources("src"), ...sources("web")]
    .map((rel) => stripComments(Deno.readTextFileSync(`${ROOT}${rel}`)))
    .filter((text) => !/\bsection\(/.test(text))
    .join("\n");
}

const SCHEMAS: SchemaName[] = ["ppo_trainer", "generation", "sft_trainer", "evaluation"];

Deno.test("every config key is read, refused when set, or has a single possible value", () => {
  const text = readerText();
  const unread: string[] = [];
  for (const name of SCHEMAS) {
    walkFields(schemaByName(name).root, (key, field) => {
      const s = field.spec;
      if (s.unsupported !== undefined || s.derived || s.inertWhile !== undefined) return;
      const oneChoice = (Array.isArray(s.choices) && s.choices.length === 1) ||
        (s.min !== undefined && s.min === s.max);
      if (oneChoice) return;
      const seg = key.split(".").pop()!;
      if (!new RegExp(`\\.${seg}\\b|\\["${seg}"\\]`).test(text)) unread.push(`${name}: ${key}`);
    });
  }
  assert.deepEqual(unread, [], "keys accepted but read nowhere: read them or mark .unsupported()");
});

Deno.test("an inert key's switch is a key of its schema, refused when on", () => {
  const bad: string[] = [];
  for (const name of SCHEMAS) {
    const fields = new Map<string, Field<unknown>>();
    walkFields(schemaByName(name).root, (key, field) => fields.set(key, field));
    for (const [key, field] of fields) {
      const sw = field.spec.inertWhile;
      if (sw === undefined) continue;
      const spec = fields.get(sw)?.spec;
      if (spec?.unsupported === undefined || spec.alsoAccepted?.length) bad.push(`${key} -> ${sw}`);
    }
  }
  assert.deepEqual(bad, [], "inert keys whose switch is missing or can be turned on");
});

Deno.test("an unsupported key set to another value is refused, naming it and what to do", () => {
  const refuse = (name: SchemaName, override: string, key: string, why: RegExp) =>
    assert.throws(
      () => loadConfig(name, { overrides: [override], skipPathChecks: true }),
      (e: unknown) => e instanceof ConfigError && e.key === key && why.test(e.message),
    );
  refuse(
    "ppo_trainer",
    "actor_rollout_ref.model.dtype=float16",
    "actor_rollout_ref.model.dtype",
    /dtype"="float16" is not supported.*float32/,
  );
  refuse(
    "ppo_trainer",
    "actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts=2",
    "actor_rollout_ref.rollout.multi_turn.num_repeat_rollouts",
    /CollabLLM recipe.*leave it at null/,
  );
  refuse("sft_trainer", "model.dtype=float16", "model.dtype", /float32/);
  // At its default the key is accepted.
  loadConfig("ppo_trainer", {
    overrides: ["actor_rollout_ref.model.dtype=float32"],
    skipPathChecks: true,
  });
});
