import assert from "node:assert/strict";
import { loadToolConfig } from "./tool_config.ts";
import { configuredHosts } from "./user_tool.ts";

// verl's examples/sglang_multiturn/config/tool_config/gsm8k_tool_config.yaml, as written there.
const GSM8K_YAML = `tools:
  - class_name: "verl.tools.gsm8k_tool.Gsm8kTool"
    config: 
      type: native
    tool_schema:
      type: "function"
      function:
        name: "calc_gsm8k_reward"
        description: "A tool for calculating the reward of gsm8k. (1.0 if parsed answer is correct, 0.0 if parsed answer is incorrect or not correctly parsed)"
        parameters:
          type: "object"
          properties:
            answer:
              type: "string"
              description: "The model's answer to the GSM8K math problem, must be a digits"
          required: ["answer"]
`;

Deno.test("verl's gsm8k tool YAML loads unchanged and scores as verl's Gsm8kTool", async () => {
  const dir = Deno.makeTempDirSync();
  Deno.writeTextFileSync(`${dir}/gsm8k_tool_config.yaml`, GSM8K_YAML);
  const [tool] = await loadToolConfig(`${dir}/gsm8k_tool_config.yaml`);
  assert.equal(tool.name, "calc_gsm8k_reward");
  assert.deepEqual(tool.schema.function.parameters?.required, ["answer"]);
  await tool.create("a", { ground_truth: "72" });
  const wrong = await tool.execute("a", { answer: "70" });
  assert.equal(wrong.reward, -0.05); // no improvement on 0
  assert.equal(await tool.calcReward("a"), 0);
  const right = await tool.execute("a", { answer: "72" });
  assert.match(right.text, /reward=1/);
  assert.equal(right.reward, 0);
  assert.equal(await tool.calcReward("a"), 1);
  assert.equal((await tool.execute("a", { answer: "#### 72" })).reward, -0.05);
  await assert.rejects(() => tool.execute("a", { answer: "1", extra: 2 }), /unknown argument/);
  await tool.release("a");
  await assert.rejects(() => tool.execute("a", { answer: "72" }), /no instance/);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("tool YAML errors name the file, the entry and the key", async () => {
  const dir = Deno.makeTempDirSync();
  const bad = async (yaml: string, why: RegExp) => {
    Deno.writeTextFileSync(`${dir}/t.yaml`, yaml);
    await assert.rejects(() => loadToolConfig(`${dir}/t.yaml`), why);
  };
  await bad("nothing: 1", /t\.yaml: expected a top-level "tools:" list/);
  await bad(
    "tools:\n  - class_name: my.pkg.Tool\n",
    /tools\[0\]\.class_name=my\.pkg\.Tool: not a built-in/,
  );
  await bad(
    "tools:\n  - class_name: calculator\n    config: {type: mcp}\n",
    /tools\[0\]\.config\.type=mcp/,
  );
  await bad(
    "tools:\n  - class_name: calculator\n    tool_schema: {type: function}\n",
    /tools\[0\]\.tool_schema: expected/,
  );
  await bad(
    "tools:\n  - class_name: calculator\n  - class_name: calculator\n",
    /second tool named/,
  );
  await bad("tools:\n  - class_name: search\n    config: {type: native}\n", /corpus_path/);
  Deno.removeSync(dir, { recursive: true });
});

Deno.test("search tool: BM25 over a local corpus, and Search-R1's HTTP retriever", async () => {
  const dir = Deno.makeTempDirSync();
  const corpus = [
    { id: "0", contents: '"Paris"\nParis is the capital of France.' },
    { id: "1", contents: '"Rome"\nRome is the capital of Italy.' },
  ];
  Deno.writeTextFileSync(`${dir}/c.jsonl`, corpus.map((r) => JSON.stringify(r)).join("\n"));
  Deno.writeTextFileSync(
    `${dir}/local.yaml`,
    `tools:\n  - class_name: verl.tools.search_tool.SearchTool\n    config: {type: native, corpus_path: ${dir}/c.jsonl, topk: 1}\n`,
  );
  const [local] = await loadToolConfig(`${dir}/local.yaml`);
  assert.equal(local.name, "search");
  await local.create("s", {});
  const r = await local.execute("s", { query_list: ["capital of italy", "france"] });
  assert.deepEqual(JSON.parse(r.text), {
    result: 'Doc 1 (Title: "Rome")\nRome is the capital of Italy.\n---\n' +
      'Doc 1 (Title: "Paris")\nParis is the capital of France.',
  });
  await assert.rejects(() => local.execute("s", { query_list: [] }), /query_list/);

  const seen: unknown[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    const body = await req.json();
    seen.push(body);
    return Response.json({
      result: body.queries.map((q: string) => [{ document: { contents: `T\n${q}!` }, score: 1 }]),
    });
  });
  const url = `http://127.0.0.1:${server.addr.port}/retrieve`;
  Deno.writeTextFileSync(
    `${dir}/http.yaml`,
    `tools:\n  - class_name: search\n    config:\n      type: native\n      retrieval_service_url: ${url}\n      topk: 2\n`,
  );
  const [remote] = await loadToolConfig(`${dir}/http.yaml`);
  await remote.create("h", {});
  const h = await remote.execute("h", { query_list: ["a"] });
  assert.deepEqual(seen, [{ queries: ["a"], topk: 2, return_scores: true }]);
  assert.equal(JSON.parse(h.text).result, "Doc 1 (Title: T)\na!");
  await server.shutdown();
  Deno.removeSync(dir, { recursive: true });
});

Deno.test({
  name: "a user's tool module runs sandboxed: lifecycle, no network, timeouts",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = Deno.makeTempDirSync();
    Deno.writeTextFileSync(
      `${dir}/counter.ts`,
      `export class Counter {
  constructor(config) { this.step = config.step; this.url = config.service?.url; this.n = new Map(); }
  create(id, kw) { this.n.set(id, kw.start ?? 0); }
  execute(id, p) {
    if (p.mode === "hang") for (;;) {}
    if (p.mode === "net") return fetch("http://127.0.0.1:8080").then(() => "reached");
    if (p.mode === "named") return fetch(this.url).then((r) => r.text());
    this.n.set(id, this.n.get(id) + this.step);
    return { text: "n=" + this.n.get(id), reward: 0.1 };
  }
  calcReward(id) { return this.n.get(id); }
  release(id) { this.n.delete(id); }
}
`,
    );
    Deno.writeTextFileSync(
      `${dir}/tools.yaml`,
      `tools:
  - class_name: ./counter.ts:Counter
    config: {type: native, step: 2, timeout: 1, service: {url: "URL"}}
    tool_schema:
      type: function
      function:
        name: counter
        parameters: {type: object, properties: {mode: {type: string}}}
`,
    );
    // The config names one service: the module may reach it and no other host or port.
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen() {} },
      () => new Response("pong"),
    );
    const url = `http://127.0.0.1:${server.addr.port}/ping`;
    const yaml = Deno.readTextFileSync(`${dir}/tools.yaml`).replace("URL", url);
    Deno.writeTextFileSync(`${dir}/tools.yaml`, yaml);
    const [tool] = await loadToolConfig(`${dir}/tools.yaml`);
    assert.equal(tool.name, "counter");
    assert.equal((await tool.execute("z", { mode: "named" })).text, "pong");
    await server.shutdown();
    await tool.create("a", { start: 5 });
    assert.deepEqual(await tool.execute("a", {}), { text: "n=7", reward: 0.1, metrics: undefined });
    assert.equal(await tool.calcReward("a"), 7);
    await assert.rejects(() => tool.execute("a", { mode: "net" }), /NotCapable|Requires net/);
    await assert.rejects(() => tool.execute("a", { mode: "hang" }), /ran over 1 s/);
    // A fresh worker serves later trajectories.
    await tool.create("b", {});
    assert.equal((await tool.execute("b", {})).text, "n=2");
    await tool.release("b");
    tool.close?.();
    Deno.writeTextFileSync(
      `${dir}/broken.yaml`,
      "tools:\n  - class_name: ./nope.ts\n    tool_schema: {type: function, function: {name: x}}\n",
    );
    await assert.rejects(
      () => loadToolConfig(`${dir}/broken.yaml`),
      /tools\[0\]\.class_name=.*nope\.ts/,
    );
    Deno.removeSync(dir, { recursive: true });
  },
});

Deno.test("a user tool may reach the hosts its config's URLs name, at any depth", () => {
  assert.deepEqual(
    configuredHosts({
      retrieval_service_url: "http://127.0.0.1:8000/retrieve",
      nested: { list: ["https://search.example.org/q", "not a url", "ftp://x.org"] },
      ws: "wss://live.example.org:9443/s",
      timeout: 30,
    }),
    ["127.0.0.1:8000", "search.example.org:443", "live.example.org:9443"],
  );
  assert.deepEqual(configuredHosts({ type: "native" }), []);
});
