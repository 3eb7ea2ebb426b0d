import assert from "node:assert/strict";
import { ConfigError } from "../../config/mod.ts";
import { checkWritable, checkWritableDirs } from "./preflight.ts";

Deno.test("output folders must be creatable; errors name the key; nothing is created", () => {
  const dir = Deno.makeTempDirSync();
  checkWritable("trainer.default_local_dir", `${dir}/a/b/c`);
  assert.deepEqual([...Deno.readDirSync(dir)], []);
  Deno.writeTextFileSync(`${dir}/file`, "");
  assert.throws(
    () =>
      checkWritableDirs([["trainer.rollout_data_dir", null], [
        "trainer.validation_data_dir",
        `${dir}/file/x`,
      ]]),
    (e: Error) =>
      e instanceof ConfigError && e.key === "trainer.validation_data_dir" &&
      e.message ===
        `trainer.validation_data_dir: cannot create ${dir}/file/x: ${dir}/file is a file, not a folder`,
  );
  Deno.removeSync(dir, { recursive: true });
});
