import assert from "node:assert/strict";
import { parseExtraState } from "./extra_state.ts";

const F = "/ckpt/global_step_2/extra_state.json";
const good = {
  global_step: 2,
  data_loader: { epoch: 1, cursor: 4, seed: 7 },
  kl_ctrl: { type: "fixed", value: 0.001 },
  config: "trainer:\n  seed: 1\n",
};
const parse = (v: unknown) => parseExtraState(JSON.stringify(v), F, 2);

Deno.test("extra_state.json is checked field by field, naming the file and the field", () => {
  assert.deepEqual(parse(good), good);
  assert.deepEqual(parse({ ...good, kl_ctrl: undefined, config: undefined }), {
    ...good,
    kl_ctrl: null,
    config: "",
  });
  // Files written before the seed was saved (or by an unshuffled run) have none.
  const older = { ...good, data_loader: { epoch: 1, cursor: 4 } };
  assert.deepEqual(parse(older), older);
  const cases: [unknown, RegExp][] = [
    [
      { ...good, global_step: "two" },
      /field "global_step" must be a non-negative integer, found "two"/,
    ],
    [{ ...good, global_step: -1 }, /field "global_step" must be a non-negative integer, found -1/],
    [{ ...good, global_step: 1.5 }, /"global_step".*found 1\.5/],
    [{ ...good, global_step: 3 }, /"global_step" is 3 but the folder is global_step_2/],
    [{ ...good, data_loader: { epoch: 0 } }, /field "data_loader" must be/],
    [{ ...good, data_loader: { epoch: 0, cursor: 0, seed: "7" } }, /"data_loader".*"seed":"7"/],
    [{ ...good, kl_ctrl: { type: "fixed", value: null } }, /field "kl_ctrl" must be null or/],
    [{ ...good, config: 5 }, /field "config"/],
    [[1, 2], /expected a JSON object/],
  ];
  for (const [v, re] of cases) {
    assert.throws(
      () => parse(v),
      (e: Error) => e.message.startsWith(`${F}: `) && re.test(e.message),
    );
  }
  const text = JSON.stringify(good, null, 1);
  assert.throws(
    () => parseExtraState(text.slice(0, text.length / 2), F, 2),
    new RegExp(`^ExtraStateError: ${F.replace(/\//g, "\\/")}: not valid JSON .*truncated`),
  );
});
