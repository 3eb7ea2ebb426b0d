import assert from "node:assert/strict";
import {
  cleanStray,
  findLatestCheckpoint,
  listCheckpoints,
  prune,
  resolveResume,
  saveCheckpoint,
  TRACKER_FILE,
} from "./manager.ts";
import { removeAside, walkFiles } from "./durable.ts";
import { CHECKSUM_FILE, verifyManifest } from "./manifest.ts";

const names = (dir: string) => [...Deno.readDirSync(dir)].map((e) => e.name).sort();

Deno.test("checkpoints land whole with checksums, keep the newest N and update the tracker", async () => {
  const root = Deno.makeTempDirSync();
  for (const step of [1, 2, 3]) {
    await saveCheckpoint(root, step, async (dir) => {
      await Deno.writeTextFile(`${dir}/weights.txt`, `w${step}`);
    }, { maxToKeep: 2 });
  }
  assert.deepEqual(listCheckpoints(root), [2, 3]);
  assert.equal(Deno.readTextFileSync(`${root}/${TRACKER_FILE}`), "3");
  assert.equal(findLatestCheckpoint(root), `${root}/global_step_3`);
  assert.deepEqual(walkFiles(`${root}/global_step_3`), [CHECKSUM_FILE, "weights.txt"]);
  assert.equal(await verifyManifest(`${root}/global_step_3`), null);
  assert.deepEqual(names(root), ["global_step_2", "global_step_3", TRACKER_FILE]);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("a save that fails midway leaves the previous checkpoint as the latest", async () => {
  const root = Deno.makeTempDirSync();
  await saveCheckpoint(root, 1, (dir) => Deno.writeTextFile(`${dir}/a`, "1"));
  await assert.rejects(
    saveCheckpoint(root, 2, async (dir) => {
      await Deno.writeTextFile(`${dir}/a`, "partial");
      throw new Error("tensor x holds NaN at element 3");
    }),
    /not saving global_step_2: tensor x holds NaN at element 3\. The checkpoints are unchanged; latest is still global_step_1\./,
  );
  assert.deepEqual(names(root), ["global_step_1", TRACKER_FILE]);
  assert.equal(resolveResume("auto", { root }), `${root}/global_step_1`);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("actor and critic are pruned by their own limits; a folder left empty goes", async () => {
  const root = Deno.makeTempDirSync();
  const parts = { actor: 2, critic: 1 };
  for (const step of [1, 2, 3]) {
    await saveCheckpoint(root, step, async (dir) => {
      for (const p of ["actor", "critic"]) {
        Deno.mkdirSync(`${dir}/${p}`);
        await Deno.writeTextFile(`${dir}/${p}/w`, `${p}${step}`);
      }
    }, { partsToKeep: parts });
  }
  assert.deepEqual(listCheckpoints(root), [2, 3]);
  assert.deepEqual(names(`${root}/global_step_2`), ["actor", CHECKSUM_FILE]);
  assert.deepEqual(names(`${root}/global_step_3`), ["actor", CHECKSUM_FILE, "critic"]);
  assert.match(
    (await verifyManifest(`${root}/global_step_2`))!.why,
    /global_step_2\/critic was removed \(pruned by max_critic_ckpt_to_keep\?\)/,
  );
  // Checkpoints newer than the current step (a run resumed from an earlier one) are not counted.
  Deno.mkdirSync(`${root}/global_step_9/actor`, { recursive: true });
  prune(root, 3, { partsToKeep: { actor: 1 } });
  assert.deepEqual(listCheckpoints(root), [3, 9]);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("removal renames to .deleting- first; leftovers of killed runs are cleaned", () => {
  const root = Deno.makeTempDirSync();
  Deno.mkdirSync(`${root}/global_step_1/actor`, { recursive: true });
  let seen: string[] = [];
  removeAside(`${root}/global_step_1/actor`, () => (seen = names(`${root}/global_step_1`)));
  assert.deepEqual(seen, [`.deleting-actor-${Deno.pid}`]);
  assert.deepEqual(names(`${root}/global_step_1`), []);

  const strays = [
    "global_step_4.tmp-999999",
    ".deleting-global_step_2-999999",
    `${TRACKER_FILE}.tmp-999999`,
    "webrl.lock.stale-999999",
    ".tmp_global_step_9_999999",
  ];
  for (const s of strays) Deno.mkdirSync(`${root}/${s}`);
  Deno.mkdirSync(`${root}/global_step_1/.deleting-critic-999999`);
  Deno.mkdirSync(`${root}/global_step_5.tmp-${Deno.pid}`); // this live process's: spared
  Deno.writeTextFileSync(`${root}/notes.txt`, "mine");
  assert.equal(findLatestCheckpoint(root), `${root}/global_step_1`);
  const removed = cleanStray(root, { onlyDead: true });
  assert.equal(removed.length, strays.length + 1);
  assert.deepEqual(names(root), ["global_step_1", `global_step_5.tmp-${Deno.pid}`, "notes.txt"]);
  cleanStray(root);
  assert.deepEqual(names(root), ["global_step_1", "notes.txt"]);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("re-saving a step swaps the folder whole", async () => {
  const root = Deno.makeTempDirSync();
  await saveCheckpoint(root, 2, (dir) => Deno.writeTextFile(`${dir}/a`, "old"));
  await saveCheckpoint(root, 2, (dir) => Deno.writeTextFile(`${dir}/a`, "new"));
  assert.equal(Deno.readTextFileSync(`${root}/global_step_2/a`), "new");
  assert.deepEqual(names(root), ["global_step_2", TRACKER_FILE]);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("resume modes validate their inputs; a tracker naming a missing folder is an error", () => {
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
  Deno.writeTextFileSync(`${root}/${TRACKER_FILE}`, "5");
  assert.throws(() => resolveResume("auto", { root }), /names global_step_5, which does not exist/);
  Deno.writeTextFileSync(`${root}/${TRACKER_FILE}`, "five");
  assert.throws(() => resolveResume("auto", { root }), /expected a step number, found "five"/);
  Deno.removeSync(root, { recursive: true });
});
