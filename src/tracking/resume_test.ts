import assert from "node:assert/strict";
import { FileLogger } from "./file.ts";
import { cutJsonl, replacementTemp } from "./resume.ts";

const lines = (path: string) => Deno.readTextFileSync(path).trim().split("\n");

Deno.test("metrics.jsonl is cut back to the resumed step, torn lines dropped, then appended", () => {
  const dir = Deno.makeTempDirSync();
  const path = `${dir}/metrics.jsonl`;
  const rec = (step: number) => JSON.stringify({ step, data: { "training/global_step": step } });
  Deno.writeTextFileSync(path, [0, 1, 2, 3].map(rec).join("\n") + '\n{"step": 4, "da');
  const notes: string[] = [];
  const log = new FileLogger(path, { resumeStep: 2, print: (l) => notes.push(l) });
  log.log(3, { "training/global_step": 3 });
  log.flush();
  log.close();
  assert.deepEqual(lines(path), [0, 1, 2, 3].map(rec));
  assert.match(notes[0], /metrics\.jsonl: dropped 2 record\(s\) after step 2/);
  // Nothing to cut: the file is left as it is.
  const before = Deno.statSync(path).mtime;
  cutJsonl(path, { resumeStep: 9 });
  assert.deepEqual(Deno.statSync(path).mtime, before);
  // No resume step (SFT): plain append.
  new FileLogger(path).close();
  assert.equal(lines(path).length, 4);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("a fresh run moves an earlier run's metrics.jsonl aside", () => {
  const dir = Deno.makeTempDirSync();
  Deno.writeTextFileSync(`${dir}/metrics.jsonl`, '{"step":1,"data":{}}\n');
  const notes: string[] = [];
  new FileLogger(`${dir}/metrics.jsonl`, { resumeStep: -1, print: (l) => notes.push(l) }).close();
  const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  assert.equal(names.length, 2);
  assert.match(names[0], /^metrics\.jsonl$/);
  assert.match(names[1], /^metrics\.replaced-[\dT-]+Z\.jsonl$/);
  assert.equal(Deno.readTextFileSync(`${dir}/metrics.jsonl`), "");
  assert.match(notes[0], /held an earlier run's metrics; moved to/);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("the temp file of a cut killed before its rename is removed by the next cut", () => {
  const dir = Deno.makeTempDirSync();
  const path = `${dir}/metrics.jsonl`;
  Deno.writeTextFileSync(path, '{"step":1,"data":{}}\n{"step":2,"data":{}}\n');
  Deno.writeTextFileSync(replacementTemp(dir, 999999), '{"step":1,"data":{}}\n');
  const notes: string[] = [];
  cutJsonl(path, { resumeStep: 1, print: (l) => notes.push(l) });
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["metrics.jsonl"]);
  assert.deepEqual(lines(path), ['{"step":1,"data":{}}']);
  assert.match(notes[0], /removed leftovers of an interrupted run: .*\.replacing\.tmp-999999$/);
  Deno.removeSync(dir, { recursive: true });
});
