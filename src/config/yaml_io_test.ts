import assert from "node:assert/strict";
import { parse } from "yaml";
import { GENERATED_FILES } from "./gen_yaml.ts";
import { type Fields, rawDefaults, Section, walkFields } from "./schema.ts";
import { schemaToYaml } from "./yaml_io.ts";

const root = new URL("../../", import.meta.url);

function leaves(tree: unknown, prefix = "", out = new Map<string, unknown>()) {
  for (const [k, v] of Object.entries(tree as Record<string, unknown>)) {
    const key = prefix ? `${prefix}.${k}` : k;
    const isSection = typeof v === "object" && v !== null && !Array.isArray(v) &&
      Object.keys(v).length > 0;
    if (isSection) leaves(v, key, out);
    else out.set(key, v);
  }
  return out;
}

for (const [rel, schema] of Object.entries(GENERATED_FILES)) {
  Deno.test(`${rel} agrees with the schema key-for-key and default-for-default`, async () => {
    const text = await Deno.readTextFile(new URL(rel, root));
    const fromFile = leaves(parse(text));
    const fromSchema = leaves(rawDefaults(schema.root as Section<Fields>));
    assert.deepEqual([...fromFile.keys()], [...fromSchema.keys()], "keys (in order)");
    for (const [k, v] of fromSchema) assert.deepEqual(fromFile.get(k), v, `default of ${k}`);
    // Every key has a comment right above it.
    const lines = text.split("\n");
    lines.forEach((line, i) => {
      if (/^\s*[a-z_]+:/.test(line)) assert.match(lines[i - 1], /^\s*#/, `comment above ${line}`);
    });
    assert.equal(text, schemaToYaml(schema), `${rel} is stale: run gen_yaml.ts`);
  });
}

Deno.test("every key has a doc string", () => {
  for (const schema of Object.values(GENERATED_FILES)) {
    walkFields(schema.root as Section<Fields>, (key, field) => {
      assert.ok(field.spec.doc.length > 8, `${schema.name}: ${key} has no doc`);
    });
  }
});

Deno.test("each generated file loads as a config and equals the defaults", async () => {
  const { loadConfig } = await import("./load.ts");
  for (const [rel, schema] of Object.entries(GENERATED_FILES)) {
    const fromFile = loadConfig(schema, {
      files: [new URL(rel, root).pathname],
      skipPathChecks: true,
    });
    assert.deepEqual(fromFile, loadConfig(schema, { skipPathChecks: true }), rel);
  }
});
