import assert from "node:assert/strict";
import { hermesParser, llama3JsonParser } from "./parser.ts";

Deno.test("hermes: several calls in one turn, in order, with the text around them", () => {
  const t = hermesParser(
    'Let me compute.<tool_call>\n{"name": "calculator", "arguments": {"expression": "1+2"}}\n' +
      '</tool_call> and <tool_call>{"name": "search", "arguments": {"query_list": ["a; b"]}}' +
      "</tool_call>",
  );
  assert.deepEqual(t.calls, [
    { ok: true, name: "calculator", arguments: { expression: "1+2" } },
    { ok: true, name: "search", arguments: { query_list: ["a; b"] } },
  ]);
  assert.equal(t.content, "Let me compute. and ");
});

Deno.test("hermes: bad JSON, a missing name and non-object arguments are error entries", () => {
  const t = hermesParser(
    '<tool_call>{"name": "calculator", "arguments": {"expression": 1+2}}</tool_call>' +
      '<tool_call>{"arguments": {}}</tool_call>' +
      '<tool_call>{"name": "calculator", "arguments": [1]}</tool_call>' +
      '<tool_call>{"name": "unknown_tool", "arguments": {}}</tool_call>',
  );
  assert.equal(t.calls.length, 4);
  assert.ok(!t.calls[0].ok && /not valid JSON/.test(t.calls[0].error));
  assert.ok(!t.calls[1].ok && /no "name"/.test(t.calls[1].error));
  assert.ok(!t.calls[2].ok && /not a JSON object/.test(t.calls[2].error));
  // An unknown tool parses: the loop answers it (calls_test.ts).
  assert.deepEqual(t.calls[3], { ok: true, name: "unknown_tool", arguments: {} });
});

Deno.test("hermes: no markup, or an unclosed tag, is no call", () => {
  assert.deepEqual(hermesParser("The answer is 3.").calls, []);
  assert.deepEqual(hermesParser('<tool_call>{"name": "x", "arguments": {}}').calls, []);
});

Deno.test("llama3_json: python_tag, ';'-separated calls, parameters or arguments", () => {
  const t = llama3JsonParser(
    '<|python_tag|>{"name": "calculator", "parameters": {"expression": "2*3;4"}}; ' +
      '{"name": "search", "arguments": {"query_list": ["x"]}}',
  );
  assert.deepEqual(t.calls, [
    { ok: true, name: "calculator", arguments: { expression: "2*3;4" } },
    { ok: true, name: "search", arguments: { query_list: ["x"] } },
  ]);
  assert.deepEqual(llama3JsonParser('{"name": "calculator", "parameters": {}}').calls.length, 1);
  assert.deepEqual(llama3JsonParser("I think {x} is fine").calls, []);
  const bad = llama3JsonParser('<|python_tag|>{"name": "calculator", "parameters": {');
  assert.ok(!bad.calls[0].ok);
});
