import assert from "node:assert/strict";
import {
  crc32c,
  encodeScalarEvent,
  eventStep,
  frameRecord,
  readRecords,
  TensorBoardWriter,
} from "./tensorboard.ts";
import { replacementTemp } from "./resume.ts";

Deno.test("crc32c matches the standard check value", () => {
  // CRC-32C of "123456789" is 0xE3069283 (RFC 3720 test vector).
  assert.equal(crc32c(new TextEncoder().encode("123456789")), 0xe3069283);
});

Deno.test("event files frame records with valid checksums and decode back", () => {
  const dir = Deno.makeTempDirSync();
  const w = new TensorBoardWriter(dir);
  w.log(3, { "actor/pg_loss": 0.5, "bad": NaN });
  w.close();
  const records = readRecords(Deno.readFileSync(w.path));
  assert.equal(records.length, 2);
  const text = new TextDecoder().decode(records[1]);
  assert.ok(text.includes("actor/pg_loss"));
  assert.ok(!text.includes("bad"), "non-finite scalars are dropped");
  // step field: tag (2 << 3 | 0) = 0x10 followed by varint 3
  const payload = encodeScalarEvent(0, 3, {});
  assert.deepEqual([...payload.subarray(9, 11)], [0x10, 3]);
  const corrupt = frameRecord(payload);
  corrupt[14] ^= 1;
  assert.throws(() => readRecords(corrupt), /bad payload checksum/);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("a resumed run cuts earlier event files back to its step and writes a new file", () => {
  const dir = Deno.makeTempDirSync();
  const w1 = new TensorBoardWriter(dir);
  for (const step of [1, 2, 3]) w1.log(step, { "training/global_step": step });
  w1.close();
  // A crash mid-write leaves a torn record at the end.
  const torn = frameRecord(encodeScalarEvent(0, 4, { x: 1 }));
  Deno.writeFileSync(w1.path, torn.subarray(0, 20), { append: true });
  const steps = (path: string) => readRecords(Deno.readFileSync(path)).map(eventStep);
  assert.throws(() => readRecords(Deno.readFileSync(w1.path)), /truncated record/);

  const notes: string[] = [];
  const w2 = new TensorBoardWriter(dir, { resumeStep: 2, print: (l) => notes.push(l) });
  w2.log(3, { "training/global_step": 3 });
  w2.close();
  assert.notEqual(w2.path, w1.path);
  assert.deepEqual(steps(w1.path), [0, 1, 2]); // the version event has no step
  assert.deepEqual(steps(w2.path), [0, 3]);
  assert.match(notes[0], /dropped 1 event\(s\) after step 2 and a torn last record/);
  const damaged = Deno.readFileSync(w2.path).subarray(0, 45); // the version event is 40 bytes
  assert.equal(readRecords(damaged, { stopAtDamage: true }).length, 1);

  // A fresh run moves the earlier files into a folder of their own.
  new TensorBoardWriter(dir, { resumeStep: -1, print: (l) => notes.push(l) }).close();
  const entries = [...Deno.readDirSync(dir)];
  assert.equal(entries.filter((e) => e.isFile).length, 1);
  const aside = entries.find((e) => e.isDirectory)!.name;
  assert.match(aside, /^replaced-[\dT-]+Z$/);
  assert.equal([...Deno.readDirSync(`${dir}/${aside}`)].length, 2);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("a cut killed before its rename leaves nothing that is read as events, and is cleaned", () => {
  const dir = Deno.makeTempDirSync();
  const w1 = new TensorBoardWriter(dir);
  for (const step of [1, 2, 3]) w1.log(step, { "training/global_step": step });
  w1.close();
  // The synced copy a kill between write and rename leaves, by this version's name and by the
  // `{file}.tmp-{pid}` name of older ones (which TensorBoard, matching "tfevents", would read).
  Deno.copyFileSync(w1.path, replacementTemp(dir, 999999));
  Deno.copyFileSync(w1.path, `${w1.path}.tmp-999998`);
  assert.ok(!replacementTemp(dir, 999999).split("/").at(-1)!.includes("tfevents"));

  const notes: string[] = [];
  const w2 = new TensorBoardWriter(dir, { resumeStep: 2, print: (l) => notes.push(l) });
  w2.log(3, { "training/global_step": 3 });
  w2.close();
  const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  assert.deepEqual(names, [w1.path, w2.path].map((p) => p.split("/").at(-1)).sort());
  const steps = names.flatMap((n) => readRecords(Deno.readFileSync(`${dir}/${n}`)).map(eventStep));
  assert.deepEqual(steps.filter((s) => s > 0), [1, 2, 3]);
  assert.match(
    notes[0],
    /removed leftovers of an interrupted run: .*\.tmp-99999[89], .*\.tmp-99999[89]/,
  );
  Deno.removeSync(dir, { recursive: true });
});
