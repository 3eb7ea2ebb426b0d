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

async function rows(dir: string, list: Record<string, unknown>[]): Promise<string> {
  const path = `${dir}/rows.parquet`;
  await writeParquet(path, { rows: list });
  return path;
}

const scored = (data_source: string, gt: string, responses: unknown) => ({
  data_source,
  reward_model: { style: "rule", ground_truth: gt },
  responses,
});

Deno.test("evaluateResponses fails when all, or more than max_failed_ratio, got no score", async () => {
  const dir = await Deno.makeTempDir();
  const quiet = { log: () => {} };
  const load = (path: string, ...o: string[]) =>
    loadConfig("evaluation", { overrides: [`data.path=${path}`, ...o] });
  const unknown = await rows(dir, [
    scored("my/dataset", "1", ["#### 1", "#### 2"]),
    scored("my/dataset", "2", ["#### 2"]),
  ]);
  await assert.rejects(
    () => evaluateResponses(load(unknown), quiet),
    new RegExp(
      `no score for 3 of 3 responses of ${unknown} \\(3 error\\): every response failed; ` +
        "reward: the built-in scorers; first: row 0 \\(data_source=my/dataset\\) error: no " +
        'built-in reward for data_source "my/dataset"; known: [^;]*\\)$',
    ),
  );
  // Even a ratio of 1 does not accept an evaluation where nothing was scored.
  await assert.rejects(() => evaluateResponses(load(unknown, "data.max_failed_ratio=1"), quiet));
  // 2 of 6 responses fail: within the default 0.5, over 0.25.
  const mixed = await rows(dir, [
    scored("openai/gsm8k", "4", ["#### 4", "#### 5"]),
    scored("nope/src", "7", ["#### 7", "#### 7"]),
    scored("synthetic/arithmetic", "19", ["#### 19", "19"]),
  ]);
  const ok = await evaluateResponses(load(mixed), quiet);
  assert.equal(ok.metrics["reward/failed"], 2);
  assert.equal(ok.metrics["test_score/openai/gsm8k"], 0.5);
  await assert.rejects(
    () => evaluateResponses(load(mixed, "data.max_failed_ratio=0.25"), quiet),
    /no score for 2 of 6 responses .*more than data\.max_failed_ratio=0\.25.*row 1 \(data_source=nope\/src\)/,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("evaluateResponses: no rows, a string or an empty list of responses name the input", async () => {
  const dir = await Deno.makeTempDir();
  const load = (path: string) => loadConfig("evaluation", { overrides: [`data.path=${path}`] });
  const str = await rows(dir, [scored("openai/gsm8k", "4", "#### 4")]);
  await assert.rejects(
    () => evaluateResponses(load(str)),
    new RegExp(
      `${str}, row 0, column "responses": expected a list of response strings .*got "#### 4"`,
    ),
  );
  const empty = await rows(dir, [
    scored("openai/gsm8k", "4", ["#### 4"]),
    scored("openai/gsm8k", "4", []),
  ]);
  await assert.rejects(
    () => evaluateResponses(load(empty)),
    new RegExp(`${empty}, row 1, column "responses": the list of responses is empty`),
  );
  const none = `${dir}/none.parquet`;
  await writeParquet(none, { columns: { data_source: [], reward_model: [], responses: [] } });
  await assert.rejects(() => evaluateResponses(load(none)), /none\.parquet: the file has no rows/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("eval CLI exits 1 when the reward throws for every response or the source is unknown", async () => {
  const dir = await Deno.makeTempDir();
  const path = await fixture(dir);
  await Deno.writeTextFile(
    `${dir}/r.ts`,
    "export function compute_score() { throw new Error('kaput'); }",
  );
  const throwing = await run([
    "src/cli/eval.ts",
    `data.path=${path}`,
    `custom_reward_function.path=${dir}/r.ts`,
  ]);
  assert.equal(throwing.code, 1, throwing.out + throwing.err);
  assert.match(
    throwing.err,
    /^eval: no score for 6 of 6 responses .*every response failed; reward: .*r\.ts \(compute_score\); first: row 0 .*kaput/m,
  );
  const unknown = await rows(dir, [scored("my/dataset", "1", ["#### 1"])]);
  const r = await run(["src/cli/eval.ts", `data.path=${unknown}`]);
  assert.equal(r.code, 1);
  assert.match(r.err, /no built-in reward for data_source "my\/dataset"/);
  assert.doesNotMatch(r.out, /test_score/);
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
  for (
    const bad of [["--digits=0"], ["--size=3"], ["--ops=/"], ["--train_size"], [
      "--plain_ratio=2",
    ], ["--plain_ratio="]]
  ) {
    const r = await run(["src/cli/data.ts", "--out_dir", dir, ...bad]);
    assert.equal(r.code, 2, bad.join(" "));
    assert.match(r.err, /^data: /);
  }
  await Deno.remove(dir, { recursive: true });
});
