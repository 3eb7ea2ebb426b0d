import assert from "node:assert/strict";
import type { Tokenizer } from "../io/mod.ts";
import {
  defaultComputeScore,
  KNOWN_DATA_SOURCES,
  UnknownDataSourceError,
} from "./default_score.ts";
import { InProcessScorer } from "./in_process.ts";
import { RewardManager } from "./manager.ts";

Deno.test("defaultComputeScore dispatches on data_source and names unknown ones", () => {
  assert.equal(defaultComputeScore("openai/gsm8k", "#### 5", "5"), 1);
  assert.equal(defaultComputeScore("HuggingFaceH4/MATH-500", "\\boxed{5}", "5"), 1);
  assert.equal(defaultComputeScore("lighteval/MATH", "\\boxed{6}", "5"), 0);
  assert.equal(defaultComputeScore("DigitalLearningGmbH/MATH-lighteval", "\\boxed{5}", "5"), 1);
  assert.equal(defaultComputeScore("synthetic/arithmetic", "#### 19", "19"), 1);
  assert.equal(defaultComputeScore("synthetic/arithmetic", "19", "19"), 0);
  assert.throws(() => defaultComputeScore("my/dataset", "x", "y"), (e: unknown) => {
    assert.ok(e instanceof UnknownDataSourceError);
    assert.match(e.message, /"my\/dataset"/);
    for (const k of KNOWN_DATA_SOURCES) assert.ok(e.message.includes(k));
    return true;
  });
});

const charTok: Tokenizer = {
  vocabSize: 128,
  eosTokenId: 0,
  padTokenId: 0,
  bosTokenId: null,
  encode: (t) => [...t].map((c) => c.charCodeAt(0)),
  decode: (ids) =>
    Array.from(ids).filter((i) => i !== 0).map((i) => String.fromCharCode(i)).join(""),
  applyChatTemplate: (m) => m.map((x) => x.content).join("\n"),
};

Deno.test("scores land on the last valid token; empty masks are counted", async () => {
  const R = 8;
  const rows = ["#### 7", "#### 9", "", "#### 3"];
  const ids = new Int32Array(rows.length * R);
  const mask = new Uint8Array(rows.length * R);
  rows.forEach((r, b) => {
    [...r].forEach((c, t) => {
      ids[b * R + t] = c.charCodeAt(0);
      mask[b * R + t] = 1;
    });
  });
  const logs: string[] = [];
  const m = new RewardManager({ tokenizer: charTok, log: (l) => logs.push(l) });
  const r = await m.score({
    responseIds: ids,
    responseMask: mask,
    responseLength: R,
    dataSources: ["openai/gsm8k", "openai/gsm8k", "openai/gsm8k", "unknown/src"],
    groundTruths: ["7", "8", "1", "3"],
  });
  assert.deepEqual(r.responses, rows);
  assert.deepEqual([...r.scores], [1, 0, 0, 0]);
  assert.equal(r.tokenLevelScores[0 * R + 5], 1);
  assert.equal(r.tokenLevelScores.reduce((a, b) => a + b, 0), 1);
  assert.equal(r.metrics["reward/empty_response"], 1);
  assert.equal(r.metrics["reward/errors"], 1);
  assert.equal(r.failures[0].index, 3);
  assert.equal(r.failures[0].dataSource, "unknown/src");
  assert.match(logs[0], /sample 3 .*unknown\/src/);
});

Deno.test("dict returns become reward_extra_info columns; bad values are counted", async () => {
  const fn = (ds: string, s: string) => {
    if (ds === "dict") return { score: 0.5, acc: s === "a" };
    if (ds === "inf") return Infinity;
    if (ds === "str") return "1" as unknown as number;
    if (ds === "noscore") return { acc: 1 } as unknown as number;
    return 1;
  };
  const m = new RewardManager({ scorer: new InProcessScorer(fn), log: () => {} });
  const r = await m.score({
    responses: ["a", "b", "c", "d", "e"],
    responseMask: new Uint8Array(5).fill(1),
    responseLength: 1,
    dataSources: ["dict", "plain", "inf", "str", "noscore"],
    groundTruths: ["", "", "", "", ""],
  });
  assert.deepEqual([...r.scores], [0.5, 1, 0, 0, 0]);
  assert.deepEqual(r.rewardExtraInfo, { acc: [true, null, null, null, null] });
  assert.equal(r.metrics["reward/non_finite"], 1);
  assert.equal(r.metrics["reward/errors"], 2);
  assert.equal(r.metrics["reward/failed"], 3);
  assert.match(r.failures.find((f) => f.index === 4)!.message, /without a numeric "score"/);
});
