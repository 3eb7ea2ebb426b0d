import assert from "node:assert/strict";
import {
  findLatestCheckpoint,
  listCheckpoints,
  resolveResume,
  saveCheckpoint,
  TRACKER_FILE,
} from "./manager.ts";

Deno.test("checkpoints land whole, keep the newest N and update the tracker", async () => {
  const root = Deno.makeTempDirSync();
  for (const step of [1, 2, 3]) {
    await saveCheckpoint(root, step, async (dir) => {
      await Deno.writeTextFile(`${dir}/weights.txt`, `w${step}`);
    }, { maxToKeep: 2 });
  }
  assert.deepEqual(listCheckpoints(root), [2, 3]);
  assert.equal(Deno.readTextFileSync(`${root}/${TRACKER_FILE}`), "3");
  assert.equal(findLatestCheckpoint(root), `${root}/global_step_3`);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("a save that fails midway leaves the previous checkpoint as the latest", async () => {
  const root = Deno.makeTempDirSync();
  await saveCheckpoint(root, 1, (dir) => Deno.writeTextFile(`${dir}/a`, "1"));
  await assert.rejects(
    saveCheckpoint(root, 2, async (dir) => {
      await Deno.writeTextFile(`${dir}/a`, "partial");
      throw new Error("disk full");
    }),
    /disk full/,
  );
  assert.deepEqual(listCheckpoints(root), [1]);
  assert.equal(resolveResume("auto", { root }), `${root}/global_step_1`);
  // A temp folder left by a killed process is never taken for a checkpoint.
  Deno.mkdirSync(`${root}/.tmp_global_step_9_1`);
  assert.equal(findLatestCheckpoint(root), `${root}/global_step_1`);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("resume modes validate their inputs", () => {
  const root = Deno.makeTempDirSync();
  assert.equal(resolveResume("disable", { root }), null);
  assert.equal(resolveResume("auto", { root }), null);
  assert.throws(
    () => resolveResume("resume_path", { root, resumeFromPath: `${root}/step_3` }),
    /must be a global_step_N checkpoint folder/,
  );
  assert.throws(
    () => resolveResume("resume_path", { root, resumeFromPath: `${root}/global_step_3` }),
    /does not exist/,
  );
  assert.throws(() => resolveResume("sometimes", { root }), /valid: auto, disable, resume_path/);
  Deno.removeSync(root, { recursive: true });
});
