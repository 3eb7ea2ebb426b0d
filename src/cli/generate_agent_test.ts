import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { gpuTest } from "../testing/mod.ts";
import { generateArithmetic, readParquet, writeParquet } from "../data/mod.ts";
import { main } from "./generate.ts";

const MODEL = new URL("../../assets/tiny_arith", import.meta.url).pathname;
const quiet = { print: () => {} };

/** Arithmetic prompts with interaction_kwargs in extra_info, where verl's preprocessing puts them. */
async function fixture() {
  const dir = await Deno.makeTempDir({ prefix: "generate_agent_test_" });
  const rows = generateArithmetic({ count: 4, digits: 1, operands: 4, seed: 3 }).map((r) => ({
    ...r,
    extra_info: {
      ...(r.extra_info as object),
      interaction_kwargs: {
        name: "gsm8k",
        ground_truth: (r.reward_model as { ground_truth: string }).ground_truth,
      },
    },
  }));
  await writeParquet(`${dir}/prompts.parquet`, { rows });
  Deno.writeTextFileSync(
    `${dir}/interaction.yaml`,
    "interaction:\n  - class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction\n" +
      "    config: {incorrect_feedback: 'wrong, try again', correct_feedback: right}\n",
  );
  return dir;
}

gpuTest("generate with multi_turn: responses plus whole conversations with roles", async () => {
  const dir = await fixture();
  const out = `${dir}/out.parquet`;
  const lines: string[] = [];
  const summary = await main([
    `model.path=${MODEL}`,
    `data.path=${dir}/prompts.parquet`,
    `data.output_path=${out}`,
    "data.n_samples=3",
    "data.batch_size=2",
    "data.max_prompt_length=16",
    "rollout.prompt_length=16",
    "rollout.response_length=48",
    "rollout.multi_turn.enable=true",
    `rollout.multi_turn.interaction_config_path=${dir}/interaction.yaml`,
    "rollout.multi_turn.max_user_turns=2",
  ], { print: (l) => lines.push(l) });
  assert.equal(summary.responses, 12);
  assert.ok(
    lines.some((l) => /^generated 4\/4 prompts: num_turns\/mean=/.test(l)),
    lines.join("\n"),
  );
  const rows = await readParquet(out);
  assert.equal(rows.length, 4);
  let replies = 0;
  for (const row of rows) {
    const gt = (row.reward_model as { ground_truth: string }).ground_truth;
    const convs = row.conversations as { role: string; content: string }[][];
    const responses = row.responses as string[];
    assert.equal(convs.length, 3);
    convs.forEach((msgs, j) => {
      assert.deepEqual(msgs[0], (row.prompt as unknown[])[0]);
      // After the prompt: assistant, user, assistant, ... (at most 2 user replies).
      msgs.slice(1).forEach((m, i) => assert.equal(m.role, i % 2 ? "user" : "assistant"));
      assert.ok(msgs.filter((m) => m.role === "user").length <= 3);
      for (let i = 2; i < msgs.length; i += 2) {
        const right = msgs[i - 1].content.trim() === `#### ${gt}`;
        assert.equal(msgs[i].content, right ? "right" : "wrong, try again");
        replies++;
      }
      // The response is every turn up to the policy's last, as the reward manager reads it.
      const lastAssistant = msgs.map((m) => m.role).lastIndexOf("assistant");
      assert.equal(responses[j], msgs.slice(1, lastAssistant + 1).map((m) => m.content).join(""));
    });
  }
  assert.ok(replies > 0, "the interaction replied");
  await Deno.remove(dir, { recursive: true });
});

gpuTest("generate with multi_turn: a bad interaction YAML names the file and the key", async () => {
  const dir = await fixture();
  Deno.writeTextFileSync(`${dir}/bad.yaml`, "interaction:\n  - class_name: verl.nope.Thing\n");
  const args = [
    `model.path=${MODEL}`,
    `data.path=${dir}/prompts.parquet`,
    `data.output_path=${dir}/out.parquet`,
    "rollout.response_length=48",
    "rollout.multi_turn.enable=true",
  ];
  await assert.rejects(
    () => main([...args, `rollout.multi_turn.interaction_config_path=${dir}/bad.yaml`], quiet),
    new RegExp(
      `${dir}/bad\\.yaml: interaction\\[0\\]\\.class_name=verl\\.nope\\.Thing: not a built-in`,
    ),
  );
  Deno.writeTextFileSync(
    `${dir}/two.yaml`,
    "interaction:\n  - {name: a, class_name: gsm8k}\n  - {name: b, class_name: gsm8k}\n",
  );
  await assert.rejects(
    () => main([...args, `rollout.multi_turn.interaction_config_path=${dir}/two.yaml`], quiet),
    new RegExp(
      `${dir}/prompts\\.parquet, row 0: this row names interaction_kwargs\\.name="gsm8k", not an interaction .*\\(a, b\\)`,
    ),
  );
  assert.ok(!existsSync(`${dir}/out.parquet`));
  await Deno.remove(dir, { recursive: true });
});
