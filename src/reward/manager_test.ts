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
  assert.deepEqual(r.rewardExtraInfo, {
    score: [0.5, null, null, null, null],
    acc: [true, null, null, null, null],
  });
  assert.equal(r.metrics["reward/non_finite"], 1);
  assert.equal(r.metrics["reward/errors"], 2);
  assert.equal(r.metrics["reward/failed"], 3);
  assert.match(r.failures.find((f) => f.index === 4)!.message, /without a numeric "score"/);
});

Deno.test("dapo manager: acc for plain scores, overlong penalty over the last len tokens", async () => {
  // max_response_length 8, len 4, factor 1: expected 4 tokens; L = 2 -> 0, L = 6 -> -0.5,
  // L = 8 -> -1; an empty response is not scored (no token to put the reward on)
  const lengths = [2, 6, 8, 0, 5];
  const R = 8, B = lengths.length;
  const mask = new Uint8Array(B * R);
  lengths.forEach((n, b) => mask.fill(1, b * R, b * R + n));
  const batch = {
    responses: ["x", "y", "z", "", "w"],
    responseMask: mask,
    responseLength: R,
    dataSources: Array(B).fill("s"),
    groundTruths: Array(B).fill(""),
  };
  const fn = (_ds: string, s: string) => (s === "w" ? { score: 0.25, pred: "w" } : 1);
  const overlongBuffer = { len: 4, penaltyFactor: 1, log: true, maxResponseLength: R };
  const m = new RewardManager({
    scorer: new InProcessScorer(fn),
    manager: "dapo",
    overlongBuffer,
    log: () => {},
  });
  const r = await m.score(batch);
  assert.deepEqual([...r.scores], [1, 0.5, 0, 1, 0.25 - 0.25]);
  assert.equal(r.tokenLevelScores[1 * R + 5], 0.5); // on the last valid token
  assert.deepEqual(r.rewardExtraInfo.acc, [1, 1, 1, 1, null]);
  assert.deepEqual(r.rewardExtraInfo.score, [null, null, null, null, 0.25]);
  assert.deepEqual(r.rewardExtraInfo.overlong_reward, [0, -0.5, -1, null, -0.25]);
  assert.deepEqual(r.rewardExtraInfo.overlong, [0, 1, 1, null, 1]);
  assert.equal(r.metrics["reward/overlong/mean"], 0.75);
  assert.equal(r.metrics["reward/overlong_reward/mean"], -1.75 / 4);
  // naive: no acc column, and overlong_buffer is an error naming the key to set
  const naive = await new RewardManager({ scorer: new InProcessScorer(fn) }).score(batch);
  assert.equal(naive.rewardExtraInfo.acc, undefined);
  assert.throws(
    () => new RewardManager({ overlongBuffer }),
    /reward_model\.reward_manager=dapo/,
  );
  assert.throws(
    () => new RewardManager({ manager: "dapo", overlongBuffer: { ...overlongBuffer, len: 9 } }),
    /overlong_buffer\.len=9 must be an integer in \[1, data\.max_response_length=8\]/,
  );
});
