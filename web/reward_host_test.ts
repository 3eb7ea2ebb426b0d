// The pasted-reward sandbox runs in Deno's Web Workers too, so its rules are tested here: scores
// come back per sample, a throw is an error outcome, a hang is a timeout that costs only its own
// sample, the network and storage throw PermissionDenied, and code that cannot load is refused.
import assert from "node:assert/strict";
import { BrowserSandbox } from "./reward_host.ts";

const workerUrl = new URL("./reward_sandbox.ts", import.meta.url);
const sample = (solution: string, groundTruth = "7") => ({
  dataSource: "my/task",
  solution,
  groundTruth,
  extraInfo: { index: 1 },
});

Deno.test("a pasted compute_score scores each sample; a throw is that sample's error", async () => {
  const s = await BrowserSandbox.load(
    `export function compute_score(ds, sol, gt, extra) {
      if (sol === "boom") throw new Error("bad answer");
      return { score: sol.trim() === gt ? 1 : 0, source: ds, index: extra.index };
    }`,
    { timeoutS: 5, workerUrl },
  );
  try {
    const out = await s.scoreBatch([sample("7"), sample("boom"), sample("8")]);
    assert.deepEqual(out[0], { ok: true, value: { score: 1, source: "my/task", index: 1 } });
    assert.equal(out[1].ok, false);
    assert.match(!out[1].ok ? `${out[1].kind} ${out[1].message}` : "", /^error Error: bad answer/);
    assert.deepEqual(out[2], { ok: true, value: { score: 0, source: "my/task", index: 1 } });
  } finally {
    s.close();
  }
});

Deno.test("a hang times out alone; the worker is replaced for the next sample", async () => {
  const s = await BrowserSandbox.load(
    `function compute_score(ds, sol) { if (sol === "loop") { while (true) {} } return 1; }`,
    { timeoutS: 0.3, workerUrl },
  );
  try {
    const out = await s.scoreBatch([sample("loop"), sample("7")]);
    assert.equal(out[0].ok, false);
    assert.equal(!out[0].ok && out[0].kind, "timeout");
    assert.deepEqual(out[1], { ok: true, value: 1 });
    assert.equal(s.restarts, 1);
  } finally {
    s.close();
  }
});

Deno.test("network and storage throw PermissionDenied inside the sandbox", async () => {
  const s = await BrowserSandbox.load(
    `async function compute_score(ds, sol) {
      if (sol === "fetch") await fetch("http://127.0.0.1:9/");
      if (sol === "ws") new WebSocket("ws://127.0.0.1:9/");
      if (sol === "storage") await navigator.storage.getDirectory();
      if (sol === "proto") {
        await Object.getOwnPropertyDescriptor(Object.getPrototypeOf(self), "fetch")?.get?.();
        let o = self;
        while (o && !Object.hasOwn(o, "fetch")) o = Object.getPrototypeOf(o);
        await Object.getOwnPropertyDescriptor(o, "fetch").get.call(self)("http://127.0.0.1:9/");
      }
      return 1;
    }`,
    { timeoutS: 5, workerUrl },
  );
  try {
    const out = await s.scoreBatch(
      [sample("fetch"), sample("ws"), sample("storage"), sample("proto")],
    );
    for (const o of out) {
      assert.equal(o.ok, false);
      assert.equal(!o.ok && o.kind, "permission_denied", JSON.stringify(o));
    }
  } finally {
    s.close();
  }
});

Deno.test("code that does not parse, or lacks compute_score, is refused at load", async () => {
  await assert.rejects(
    BrowserSandbox.load("function compute_score( {", { timeoutS: 5, workerUrl }),
    /reward function: SyntaxError/,
  );
  await assert.rejects(
    BrowserSandbox.load("function score() { return 1; }", { timeoutS: 5, workerUrl }),
    /defines no function named compute_score/,
  );
});
