import assert from "node:assert/strict";
import { checkLayers, findCycles, importsOf, projectFiles, type SourceFile } from "./layers.ts";

const file = (path: string, text: string): SourceFile => ({ path, text });

function problems(files: SourceFile[]): string[] {
  return checkLayers(files).map((v) => `${v.path}: ${v.message}`);
}

Deno.test("imports: static, type-only, re-exports and dynamic; comments ignored", () => {
  const text = [
    'import { a } from "./a.ts";',
    'import type { B } from "../b/mod.ts";',
    'export { c } from "./c.ts";',
    'export * from "./d.ts";',
    'const e = await import("./e.ts");',
    '// import { f } from "./f.ts";',
    'import assert from "node:assert/strict";',
  ].join("\n");
  assert.deepEqual(importsOf(text), ["./a.ts", "../b/mod.ts", "./c.ts", "./d.ts", "./e.ts"]);
});

Deno.test("an upward import, an import of internals and testing outside tests are refused", () => {
  const out = problems([
    file("src/tensor/x.ts", 'import { fit } from "../trainer/mod.ts";'),
    file("src/trainer/y.ts", 'import { matmul } from "../tensor/ops/matmul.ts";'),
    file("src/nn/z.ts", 'import { rng } from "../testing/mod.ts";'),
    file("src/nn/z_test.ts", 'import { rng } from "../testing/mod.ts";'),
    file("src/trainer/ok.ts", 'import { Tensor } from "../tensor/mod.ts";'),
    file("web/page.ts", 'import { fit } from "../src/trainer/ppo_trainer.ts";'),
  ]);
  assert.equal(out.length, 4, out.join("\n"));
  assert.match(out[0], /^src\/tensor\/x\.ts: .*tensor \(layer 1\) may not import trainer/);
  assert.match(out[1], /^src\/trainer\/y\.ts: .*reaches into src\/tensor\/ internals/);
  assert.match(out[2], /^src\/nn\/z\.ts: .*src\/testing is for tests only/);
  assert.match(out[3], /^web\/page\.ts: .*reaches into src\/trainer\/ internals/);
});

Deno.test("src/mod.ts, the library surface, is used from cli and outside src only", () => {
  const out = problems([
    file("src/trainer/lib_user.ts", 'import { loadModel } from "../mod.ts";'),
    file("src/cli/lib_user.ts", 'import { loadModel } from "../mod.ts";'),
    file("src/nn/lib_user_test.ts", 'import { loadModel } from "../mod.ts";'),
    file("bench/lib_user.ts", 'import { loadModel } from "../src/mod.ts";'),
  ]);
  assert.equal(out.length, 1, out.join("\n"));
  assert.match(out[0], /^src\/trainer\/lib_user\.ts: .*library surface above every layer/);
});

Deno.test("circles (type-only imports count), long files and `any` are refused", () => {
  const long = Array.from({ length: 501 }, () => "").join("\n");
  const out = problems([
    file("src/gpu/a.ts", 'import type { B } from "./b.ts";'),
    file("src/gpu/b.ts", 'import { a } from "./a.ts";'),
    file("src/gpu/long.ts", long),
    file("src/gpu/loose.ts", "export function f(x: any) { return x; }"),
    file("src/gpu/fine.ts", 'const many = "any"; // any in a comment is fine'),
  ]);
  assert.equal(out.length, 3, out.join("\n"));
  assert.ok(
    out.some((p) => /import circle: src\/gpu\/a\.ts -> src\/gpu\/b\.ts -> src\/gpu\/a\.ts/.test(p)),
  );
  assert.ok(out.some((p) => /long\.ts: 501 lines/.test(p)));
  assert.ok(out.some((p) => /loose\.ts: uses `any`/.test(p)));
  assert.deepEqual(findCycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", []]])), []);
});

Deno.test("the project itself keeps the rule", async () => {
  const root = new URL("../", import.meta.url).pathname;
  assert.deepEqual(problems(await projectFiles(root)), []);
});

Deno.test("docs/layers.svg is drawn from the rule and names every layer", async () => {
  const { layersSvg, ROLES } = await import("./layers_svg.ts");
  const { LAYERS } = await import("./layers.ts");
  const svg = await Deno.readTextFile(new URL("../docs/layers.svg", import.meta.url));
  assert.equal(svg, layersSvg(), "docs/layers.svg is stale: run deno run -A tools/layers_svg.ts");
  assert.deepEqual(Object.keys(ROLES).sort(), Object.keys(LAYERS).sort());
});
