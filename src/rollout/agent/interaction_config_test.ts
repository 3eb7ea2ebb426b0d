import assert from "node:assert/strict";
import { Gsm8kInteraction } from "./interaction.ts";
import { defaultInteractionName, loadInteractionConfig } from "./interaction_config.ts";

/** verl's examples/sglang_multiturn/config/interaction_config/gsm8k_interaction_config.yaml */
const VERL_GSM8K = `interaction:
  - name: "gsm8k"
    class_name: "verl.interactions.gsm8k_interaction.Gsm8kInteraction"
    config: {}`;

Deno.test("verl's gsm8k interaction YAML loads unchanged; names default from the class", async () => {
  const dir = Deno.makeTempDirSync();
  Deno.writeTextFileSync(`${dir}/gsm8k.yaml`, VERL_GSM8K);
  const [g] = await loadInteractionConfig(`${dir}/gsm8k.yaml`);
  assert.ok(g instanceof Gsm8kInteraction);
  assert.equal(g.name, "gsm8k");
  Deno.writeTextFileSync(
    `${dir}/two.yaml`,
    "interaction:\n  - class_name: verl.interactions.gsm8k_interaction.Gsm8kInteraction\n" +
      "  - name: strict_math\n    class_name: gsm8k\n    config: {correct_feedback: yes}\n",
  );
  const two = await loadInteractionConfig(`${dir}/two.yaml`);
  assert.deepEqual(two.map((x) => x.name), ["gsm8k", "strict_math"]);
  await two[1].start("i", { ground_truth: "3" });
  assert.equal(
    (await two[1].generateResponse("i", [{ role: "assistant", content: "#### 3" }], {}))
      .content,
    "yes",
  );
  assert.equal(defaultInteractionName("custom.interactions.CustomInteraction"), "custom");
  assert.equal(defaultInteractionName("./my_user.ts:Feedback"), "feedback");
  assert.equal(defaultInteractionName("./coach_interaction.ts"), "coach_interaction");
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("bad interaction YAML: errors name the file, the entry and the key", async () => {
  const dir = Deno.makeTempDirSync();
  const bad = async (yaml: string, re: RegExp) => {
    Deno.writeTextFileSync(`${dir}/i.yaml`, yaml);
    await assert.rejects(() => loadInteractionConfig(`${dir}/i.yaml`), re);
  };
  const file = `${dir}/i.yaml`.replaceAll("/", "\\/");
  await bad("tools: []\n", new RegExp(`^Error: ${file}: expected a top-level "interaction:" list`));
  await bad("interaction:\n  - name: x\n", new RegExp(`${file}: interaction\\[0\\]\\.class_name:`));
  await bad(
    "interaction:\n  - class_name: gsm8k\n  - class_name: nope.Thing\n",
    new RegExp(`${file}: interaction\\[1\\]\\.class_name=nope\\.Thing: not a built-in .*gsm8k`),
  );
  await bad(
    "interaction:\n  - class_name: gsm8k\n    config: [1]\n",
    /interaction\[0\]\.config: expected a mapping/,
  );
  await bad(
    "interaction:\n  - class_name: gsm8k\n  - name: gsm8k\n    class_name: gsm8k\n",
    /interaction\[1\]\.name=gsm8k: a second interaction with this name/,
  );
  await bad(
    "interaction:\n  - class_name: ./missing.ts\n",
    /interaction\[0\]\.class_name=.*missing\.ts: /,
  );
  await bad("interaction: [\n", /multi_turn\.interaction_config_path=.*i\.yaml: /);
  await assert.rejects(
    () => loadInteractionConfig(`${dir}/absent.yaml`),
    /multi_turn\.interaction_config_path=.*absent\.yaml/,
  );
  Deno.removeSync(dir, { recursive: true });
});

Deno.test({
  name:
    "a user's interaction module runs sandboxed: lifecycle, tuple replies, no network, timeouts",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = Deno.makeTempDirSync();
    Deno.writeTextFileSync(
      `${dir}/coach.ts`,
      `export class Coach {
  constructor(config) { this.name = config.name; this.limit = config.limit; this.s = new Map(); }
  startInteraction(id, kw) { this.s.set(id, { target: kw.ground_truth, tries: 0 }); }
  generateResponse(id, messages, kw) {
    const s = this.s.get(id);
    const last = messages.at(-1).content;
    if (last === "hang") for (;;) {}
    if (last === "net") return fetch("http://127.0.0.1:8080").then(() => [true, "", 0, {}]);
    s.tries++;
    const right = last.includes(s.target);
    return [right || s.tries >= this.limit, right ? "good" : this.name + " says no", right ? 1 : 0, { tries: s.tries }];
  }
  calculateScore(id) { return 1 / this.s.get(id).tries; }
  finalizeInteraction(id) { this.s.delete(id); }
}
`,
    );
    Deno.writeTextFileSync(
      `${dir}/i.yaml`,
      "interaction:\n  - class_name: ./coach.ts:Coach\n    config: {limit: 3, timeout: 1}\n",
    );
    const [c] = await loadInteractionConfig(`${dir}/i.yaml`);
    assert.equal(c.name, "coach");
    await c.start("a", { ground_truth: "42" });
    const say = (content: string) =>
      c.generateResponse("a", [{ role: "assistant", content }], { ground_truth: "42" });
    assert.deepEqual(await say("41"), {
      shouldTerminate: false,
      content: "coach says no",
      score: 0,
      extra: { tries: 1 },
    });
    assert.deepEqual(await say("it is 42"), {
      shouldTerminate: true,
      content: "good",
      score: 1,
      extra: { tries: 2 },
    });
    assert.equal(await c.calculateScore("a", {}), 0.5);
    await c.finalize("a", {});
    await assert.rejects(() => c.calculateScore("a", {}), /TypeError/);
    await c.start("b", { ground_truth: "1" });
    await assert.rejects(
      () => c.generateResponse("b", [{ role: "assistant", content: "net" }], {}),
      /NotCapable|Requires net/,
    );
    await assert.rejects(
      () => c.generateResponse("b", [{ role: "assistant", content: "hang" }], {}),
      /coach\.generateResponse ran over 1 s/,
    );
    // A fresh worker serves later trajectories.
    await c.start("d", { ground_truth: "7" });
    assert.equal(
      (await c.generateResponse("d", [{ role: "assistant", content: "7" }], {})).score,
      1,
    );
    c.close?.();
    Deno.writeTextFileSync(`${dir}/noreply.ts`, "export default class { }\n");
    Deno.writeTextFileSync(`${dir}/j.yaml`, "interaction:\n  - class_name: ./noreply.ts\n");
    await assert.rejects(
      () => loadInteractionConfig(`${dir}/j.yaml`),
      /interaction\[0\]\.class_name=.*noreply\.ts: .*has no generateResponse\(\)/,
    );
    Deno.removeSync(dir, { recursive: true });
  },
});
