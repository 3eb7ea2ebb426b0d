import assert from "node:assert/strict";
import { ConfigError } from "./errors.ts";
import { absoluteKey, parseReference, resolveRefs } from "./interpolate.ts";

Deno.test("relative references climb one level per extra dot, as in OmegaConf", () => {
  assert.equal(
    absoluteKey(".save_contents", "critic.checkpoint.load_contents"),
    "critic.checkpoint.save_contents",
  );
  assert.equal(absoluteKey("..grad_clip", "critic.optim.clip_grad"), "critic.grad_clip");
  assert.equal(absoluteKey("...x", "a.b.c"), "x");
  assert.equal(absoluteKey("data.seed", "a.b.c"), "data.seed");
  assert.throws(() => absoluteKey("....x", "a.b.c"), ConfigError);
});

Deno.test("oc.select reads its key and a YAML default; no default is null", () => {
  assert.deepEqual(parseReference("oc.select:a.b, [1, 2]", "x.y"), {
    key: "a.b",
    select: true,
    fallback: [1, 2],
  });
  assert.deepEqual(parseReference('oc.select:.n,"~/m"', "x.y").fallback, "~/m");
  assert.equal(parseReference("oc.select:.n", "x.y").key, "x.n");
  assert.equal(parseReference("oc.select:a", "x").fallback, null);
  assert.equal(parseReference(" a.b ", "x").select, false);
});

Deno.test("resolveRefs: typed copies, text substitution, absent keys and cycles", () => {
  const tree: Record<string, unknown> = {
    a: { n: 3, list: [1, 2], s: "run" },
    b: {
      n: "${oc.select:a.n,7}",
      m: "${oc.select:a.missing,7}",
      list: "${a.list}",
      name: "${a.s}-${oc.select:a.n}",
      sibling: "${.n}",
    },
  };
  const copied = resolveRefs(tree);
  assert.deepEqual(tree.b, { n: 3, m: 7, list: [1, 2], name: "run-3", sibling: 3 });
  assert.notEqual((tree.b as { list: unknown }).list, (tree.a as { list: unknown }).list);
  assert.ok(copied.has("b.n") && copied.has("b.sibling") && !copied.has("b.name"));
  assert.throws(
    () => resolveRefs({ a: "${b}", b: "${a}" }),
    (e: unknown) => e instanceof ConfigError && /reference cycle/.test(e.message),
  );
  assert.throws(
    () => resolveRefs({ a: "${nope.key}" }),
    (e: unknown) =>
      e instanceof ConfigError && /refers to unknown key "\$\{nope\.key\}"/.test(e.message),
  );
});
