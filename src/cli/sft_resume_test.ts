import assert from "node:assert/strict";
import { ConfigError } from "../config/mod.ts";
import { main } from "./sft.ts";

Deno.test("sft resume_mode=auto: a checkpoint in default_local_dir is an error naming it", async () => {
  const dir = await Deno.makeTempDir();
  await Deno.mkdir(`${dir}/global_step_3/huggingface`, { recursive: true });
  await Deno.mkdir(`${dir}/global_step_12`);
  await assert.rejects(
    () => main(["trainer.resume_mode=auto", `trainer.default_local_dir=${dir}`]),
    (e: Error) =>
      e instanceof ConfigError && e.key === "trainer.resume_mode" &&
      e.message.includes(`found ${dir}/global_step_12, but an SFT run does not resume`),
  );
  await assert.rejects(
    () => main(["trainer.resume_mode=resume_path", `trainer.default_local_dir=${dir}`]),
    /trainer.resume_mode=resume_path: an SFT run does not resume/,
  );
  await Deno.remove(dir, { recursive: true });
});
