/**
 * The bring-your-own scenario of web/test.ts, with fixtures the project writes: a model folder
 * (assets/tiny_arith re-saved as bfloat16, so the download must keep bf16), a parquet of verl rows
 * under a data_source no built-in scorer knows, a pasted compute_score that also checks the sandbox
 * blocks the network, and a folder whose config is too large for the adapter.
 */
import assert from "node:assert/strict";
import { unzipSync } from "fflate";
import { readParquet, writeParquet } from "../src/data/mod.ts";
import {
  convertFloatBytes,
  loadTokenizer,
  readModelFolder,
  readSafetensorsFile,
  writeSafetensorsFile,
} from "../src/io/mod.ts";
import { checkScreenshot, type Harness, state, waitStatus } from "./test_page.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const SOURCE = `${ROOT}assets/tiny_arith`;

/** Scores `#### n`; returns -1 if fetch works and -2 if it fails the wrong way (never, here). */
const REWARD_CODE = `function compute_score(dataSource, solutionStr, groundTruth, extraInfo) {
  if (dataSource !== "my/arith") throw new Error("unexpected data_source " + dataSource);
  try { fetch("http://example.com/"); return -1; } catch (e) {
    if (e.name !== "PermissionDenied") return -2;
  }
  const m = solutionStr.match(/####\\s*(-?\\d+)/);
  return m && m[1] === String(groundTruth) ? 1 : 0;
}`;

/** Writes the fixtures under `dir`; returns their paths. */
async function fixtures(dir: string) {
  const model = `${dir}/my_model`, huge = `${dir}/huge_model`;
  for (const d of [model, huge]) await Deno.mkdir(d, { recursive: true });
  for (const f of ["tokenizer.json", "tokenizer_config.json"]) {
    await Deno.copyFile(`${SOURCE}/${f}`, `${model}/${f}`);
    await Deno.copyFile(`${SOURCE}/${f}`, `${huge}/${f}`);
  }
  const config = JSON.parse(await Deno.readTextFile(`${SOURCE}/config.json`));
  await Deno.writeTextFile(
    `${model}/config.json`,
    JSON.stringify({ ...config, torch_dtype: "bfloat16" }, null, 2),
  );
  const st = await readSafetensorsFile(`${SOURCE}/model.safetensors`);
  await writeSafetensorsFile(
    `${model}/model.safetensors`,
    st.tensors.map((t) => ({
      name: t.name,
      dtype: "BF16" as const,
      shape: t.shape,
      bytes: convertFloatBytes(t.bytes, t.dtype, "BF16"),
    })),
    { metadata: { format: "pt" } },
  );
  // A 7B-like embedding: 152064 x 8192 f32 is 4.6 GiB, past any adapter's binding limit.
  await Deno.writeTextFile(
    `${huge}/config.json`,
    JSON.stringify({ ...config, vocab_size: 152064, hidden_size: 8192, head_dim: 128 }),
  );
  await Deno.copyFile(`${SOURCE}/model.safetensors`, `${huge}/model.safetensors`);
  const rows = (await readParquet(`${ROOT}data/arithmetic/val.parquet`)).slice(0, 12)
    .map((r) => ({ ...r, data_source: "my/arith" }));
  const prompts = `${dir}/prompts.parquet`;
  await writeParquet(prompts, { rows });
  const badJsonl = `${dir}/bad.jsonl`;
  await Deno.writeTextFile(badJsonl, JSON.stringify(rows[0]) + "\n{not json\n");
  return { model, huge, prompts, badJsonl };
}

/**
 * Checks a downloaded model zip: one folder named `prefix` that the project's Hugging Face reader
 * loads (config.json, model.safetensors of `dtype`, a working tokenizer).
 */
export async function checkModelZip(
  zip: Uint8Array,
  o: { dtype: "F32" | "BF16"; prefix: string },
): Promise<void> {
  const files = unzipSync(zip);
  const names = Object.keys(files);
  for (const f of ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]) {
    assert.ok(
      files[`${o.prefix}/${f}`]?.byteLength > 0,
      `the zip lacks ${o.prefix}/${f}: ${names}`,
    );
  }
  const dir = await Deno.makeTempDir({ prefix: "webrl-zip-" });
  try {
    for (const [name, bytes] of Object.entries(files)) {
      await Deno.mkdir(`${dir}/${name}`.replace(/\/[^/]+$/, ""), { recursive: true });
      await Deno.writeFile(`${dir}/${name}`, bytes);
    }
    const folder = await readModelFolder(`${dir}/${o.prefix}`);
    const torch = o.dtype === "F32" ? "float32" : "bfloat16";
    assert.equal(folder.config.torchDtype, torch);
    for (const [name, t] of folder.tensors) assert.equal(t.dtype, o.dtype, name);
    const tok = await loadTokenizer(`${dir}/${o.prefix}`);
    assert.ok(tok.encode("1+2=").length > 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

export async function testBringYourOwn(h: Harness, out: string): Promise<void> {
  const f = await fixtures(`${out}/byo`);
  const page = await h.open("tiny=1&steps=1");
  const builtin = (await state(page)).model;

  await page.setInputFiles("#upload", f.huge);
  await page.waitForSelector("#model-error:not([hidden])", { timeout: 30_000 });
  const refusal = await page.locator("#model-error").innerText();
  assert.match(refusal, /model\.embed_tokens\.weight/, refusal);
  assert.match(refusal, /max(StorageBufferBindingSize|BufferSize) \(\d+ MiB\)/, refusal);
  assert.equal((await state(page)).model, builtin, "a refused folder replaced the model");

  // Loose files dropped on the drop zone (a synthetic drop: its items carry no folder entries).
  await page.evaluate(async () => {
    const dt = new DataTransfer();
    for (const name of ["config.json", "model.safetensors", "tokenizer.json"]) {
      dt.items.add(new File([await (await fetch(`model/${name}`)).blob()], name));
    }
    document.getElementById("drop")!.dispatchEvent(
      new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }),
    );
  });
  await page.waitForFunction(() =>
    (globalThis as unknown as { webrl: { model: string } }).webrl.model === "dropped files"
  );

  await page.setInputFiles("#upload", f.model);
  await page.waitForFunction(() =>
    (globalThis as unknown as { webrl: { model: string } }).webrl.model === "my_model"
  );
  assert.match(await page.locator("#model-info").innerText(), /bfloat16/);

  await page.setInputFiles("#data-file", f.badJsonl);
  await page.waitForSelector("#data-error:not([hidden])", { timeout: 20_000 });
  assert.match(
    await page.locator("#data-error").innerText(),
    /bad\.jsonl: line 2 is not valid JSON/,
  );
  await page.setInputFiles("#data-file", f.prompts);
  await page.waitForFunction(() =>
    (globalThis as unknown as { webrl: { data: string } }).webrl.data === "prompts.parquet"
  );
  assert.match(await page.locator("#data-source").innerText(), /11 training, 1 held-out/);
  assert.ok(await page.locator("#builtin-task").isHidden());

  await page.selectOption("select[name=reward]", "custom");
  await page.fill("textarea[name=rewardCode]", "function compute_score( {");
  await page.waitForSelector('.field-error[data-field="rewardCode"]', { timeout: 20_000 });
  await page.fill("textarea[name=rewardCode]", REWARD_CODE);
  await page.waitForFunction(() => document.querySelectorAll(".field-error").length === 0);
  assert.match(await page.locator("#task-explain").innerText(), /your compute_score/);

  await page.click("#start");
  await waitStatus(page, ["done", "error"], 240);
  const s = await state(page);
  assert.equal(s.status, "done", `own-model run ended with ${s.status}: ${s.error}`);
  const step = s.metrics.find((m) => m.step === 1)!.metrics;
  assert.equal(step["reward/failed"], 0, "the pasted reward failed on some answers");
  assert.ok(step["critic/score/min"] >= 0, "fetch worked inside the reward sandbox");
  await checkScreenshot(page, `${out}/4-byo.png`, ["#model-info", "#data-source", "#task-explain"]);
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  await dl.saveAs(`${out}/my_model-trained.zip`);
  await checkModelZip(await Deno.readFile(`${out}/my_model-trained.zip`), {
    dtype: "BF16",
    prefix: "my_model-trained",
  });
  await page.close();
}
