import assert from "node:assert/strict";
import { loadConfig } from "../config/mod.ts";
import { writeParquet } from "../data/mod.ts";
import { evaluateResponses } from "./main_eval.ts";

const root = new URL("../../", import.meta.url).pathname;

async function fixture(dir: string): Promise<string> {
  const path = `${dir}/gen.parquet`;
  await writeParquet(path, {
    rows: [
      {
        data_source: "openai/gsm8k",
        reward_model: { style: "rule", ground_truth: "4" },
        responses: ["#### 4", "#### 5"],
      },
      {
        data_source: "openai/gsm8k",
        reward_model: { style: "rule", ground_truth: "7" },
        responses: ["#### 7", "#### 7"],
      },
      {
        data_source: "synthetic/arithmetic",
        reward_model: { style: "rule", ground_truth: "19" },
        responses: ["#### 19", "19"],
      },
    ],
  });
  return path;
}

function run(args: string[]) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-worker-options", ...args],
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output().then((o) => ({
    code: o.code,
    out: new TextDecoder().decode(o.stdout),
    err: new TextDecoder().decode(o.stderr),
  }));
}

Deno.test("evaluateResponses reports test_score per data_source (row means first)", async () => {
  const dir = await Deno.makeTempDir();
  const cfg = loadConfig("evaluation", { overrides: [`data.path=${await fixture(dir)}`] });
  const r = await evaluateResponses(cfg);
  assert.equal(r.metrics["test_score/openai/gsm8k"], 0.75);
  assert.equal(r.metrics["test_score/synthetic/arithmetic"], 0.5);
  assert.equal(r.metrics["reward/failed"], 0);
  assert.equal(r.responses, 6);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("eval CLI prints scores, and fails clearly on bad input", async () => {
  const dir = await Deno.makeTempDir();
  const path = await fixture(dir);
  const ok = await run(["src/cli/eval.ts", `data.path=${path}`]);
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out, /test_score\/openai\/gsm8k: 0\.75/);
  const custom = await run([
    "src/cli/eval.ts",
    `data.path=${path}`,
    `custom_reward_function.path=${root}test/fixtures/reward/behaviours.ts`,
    "custom_reward_function.reward_kwargs={scale: 3}",
  ]);
  assert.equal(custom.code, 0, custom.err);
  const missing = await run(["src/cli/eval.ts", `data.path=${dir}/nope.parquet`]);
  assert.equal(missing.code, 2);
  assert.match(missing.err, /data\.path.*nope\.parquet.*does not exist/);
  const badKey = await run(["src/cli/eval.ts", `data.paht=${path}`]);
  assert.match(badKey.err, /did you mean "data\.path"/);
  const wrongCol = await run(["src/cli/eval.ts", `data.path=${path}`, "data.response_key=answers"]);
  assert.equal(wrongCol.code, 2);
  assert.match(wrongCol.err, /gen\.parquet, column "answers": missing column/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("data CLI writes disjoint train/val parquets and rejects bad flags", async () => {
  const dir = await Deno.makeTempDir();
  const ok = await run([
    "src/cli/data.ts",
    "--out_dir",
    dir,
    "--train_size=40",
    "--val_size",
    "10",
    "--ops=+,*",
  ]);
  assert.equal(ok.code, 0, ok.err);
  const { readParquet } = await import("../data/mod.ts");
  const train = await readParquet(`${dir}/train.parquet`);
  const val = await readParquet(`${dir}/val.parquet`);
  assert.equal(train.length, 40);
  assert.equal(val.length, 10);
  const expr = (r: Record<string, unknown>) => (r.extra_info as { expression: string }).expression;
  assert.ok(val.every((v) => !train.some((t) => expr(t) === expr(v))));
  assert.equal((val[0].extra_info as { split: string }).split, "test");
  for (const bad of [["--digits=0"], ["--size=3"], ["--ops=/"], ["--train_size"]]) {
    const r = await run(["src/cli/data.ts", "--out_dir", dir, ...bad]);
    assert.equal(r.code, 2, bad.join(" "));
    assert.match(r.err, /^data: /);
  }
  await Deno.remove(dir, { recursive: true });
});
