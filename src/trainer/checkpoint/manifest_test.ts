import assert from "node:assert/strict";
import { CHECKSUM_FILE, readManifest, verifyManifest, writeManifest } from "./manifest.ts";

Deno.test("checksums list every file in sha256sum's format and catch a flipped byte", async () => {
  const dir = Deno.makeTempDirSync();
  Deno.mkdirSync(`${dir}/actor`);
  Deno.writeTextFileSync(`${dir}/actor/model.safetensors`, "weights");
  Deno.writeTextFileSync(`${dir}/extra_state.json`, "{}");
  await writeManifest(dir);
  const listed = readManifest(dir)!;
  assert.deepEqual([...listed.keys()], ["actor/model.safetensors", "extra_state.json"]);
  // sha256("{}")
  assert.equal(
    listed.get("extra_state.json"),
    "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
  );
  assert.equal(await verifyManifest(dir), null);

  Deno.writeTextFileSync(`${dir}/actor/model.safetensors`, "weightz");
  const bad = await verifyManifest(dir);
  assert.equal(bad?.file, `${dir}/actor/model.safetensors`);
  assert.match(bad!.why, /SHA-256 [0-9a-f]{64} differs from [0-9a-f]{64}/);

  Deno.removeSync(`${dir}/actor/model.safetensors`);
  assert.match((await verifyManifest(dir))!.why, /cannot be read/);
  Deno.writeTextFileSync(`${dir}/${CHECKSUM_FILE}`, "garbage\n");
  assert.match((await verifyManifest(dir))!.why, /line 1 is not "<sha256> {2}<file>"/);
  Deno.removeSync(`${dir}/${CHECKSUM_FILE}`);
  assert.equal((await verifyManifest(dir))!.why, "no checksum file");
  Deno.removeSync(dir, { recursive: true });
});
