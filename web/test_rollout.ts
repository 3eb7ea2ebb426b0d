/**
 * The `rollout` scenario of web/test.ts: a real nats-server (loopback, WebSocket on), a
 * coordinator in this process publishing weights and jobs, and web/rollout.html in Chromium
 * joining as a worker over WebSocket: every job comes back once, from the tab, with log-probs.
 */
import assert from "node:assert/strict";
import {
  connectNats,
  Coordinator,
  type JobSpec,
  natsTestsEnabled,
  withNatsServer,
} from "../src/distributed/mod.ts";
import { readModelFolder, serializeModelConfig, tensorToFloat32 } from "../src/io/mod.ts";
import { ARITHMETIC_DATA_SOURCE } from "../src/reward/mod.ts";
import { checkScreenshot, type Harness } from "./test_page.ts";

const TINY = new URL("../assets/tiny_arith", import.meta.url).pathname;

export async function testRollout(h: Harness, out: string): Promise<void> {
  if (!await natsTestsEnabled()) return;
  const prefix = "webrl.webtest.rollout";
  await withNatsServer(prefix, async (s) => {
    const folder = await readModelFolder(TINY);
    const tensors = new Map([...folder.tensors].map(([k, t]) => [k, tensorToFloat32(t)]));
    const nc = await connectNats(s.url, { nkeySeed: s.trainerSeed });
    const coord = await Coordinator.open(nc, {
      prefix,
      jobTimeoutS: 60,
      stepTimeoutS: 120,
      maxDeliver: 3,
      keepVersions: 2,
    });
    await coord.publishRunInfo({
      tokenizerFiles: folder.tokenizerFiles,
      eosTokenIds: [folder.config.eosTokenId as number],
      reward: {},
    });
    await coord.publishWeights(0, serializeModelConfig(folder.config), tensors);
    const jobs: JobSpec[] = Array.from({ length: 3 }, (_, i) => ({
      jobId: `s1-${i}`,
      promptIds: [3, 4, 5, 6 + i],
      n: 2,
      responseLength: 6,
      sampling: { temperature: 1, topK: 0, topP: 1, doSample: true },
      seed: i,
      dataSource: ARITHMETIC_DATA_SOURCE,
      groundTruth: "7",
      extraInfo: {},
    }));
    await coord.submit(1, 0, jobs);
    const page = await h.context.newPage();
    page.on("pageerror", (e) => h.pageErrors.push(e.message));
    const q = new URLSearchParams({ url: s.wsUrl!, prefix, seed: s.workerSeed, id: "tab" });
    await page.goto(`${h.origin}/rollout.html?${q}&autostart=1`);
    const { trajectories } = await coord.collect(1);
    assert.deepEqual(trajectories.map((t) => t.jobId), ["s1-0", "s1-1", "s1-2"]);
    for (const t of trajectories) {
      assert.equal(t.workerId, "tab");
      assert.ok([...t.logProbs].every((x, i) => !t.responseMask[i] || (x <= 0 && x > -50)));
    }
    await page.waitForFunction(() =>
      ((globalThis as unknown as { webrlRollout: { jobs: number } }).webrlRollout.jobs) >= 3
    );
    assert.match(
      await page.locator("#progress").innerText(),
      /3 jobs done \(6 samples, up to \d jobs at once\)/,
    );
    await checkScreenshot(page, `${out}/7-rollout.png`, ["#progress", "#join"]);
    await page.click("#stop");
    await page.waitForFunction(() =>
      (globalThis as unknown as { webrlRollout: { status: string } }).webrlRollout.status === "left"
    );
    await page.close();
    await coord.close();
  });
}
