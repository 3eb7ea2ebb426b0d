import assert from "node:assert/strict";
import {
  crc32c,
  encodeScalarEvent,
  frameRecord,
  readRecords,
  TensorBoardWriter,
} from "./tensorboard.ts";

Deno.test("crc32c matches the standard check value", () => {
  // CRC-32C of "123456789" is 0xE3069283 (RFC 3720 test vector).
  assert.equal(crc32c(new TextEncoder().encode("123456789")), 0xe3069283);
});

Deno.test("event files frame records with valid checksums and decode back", () => {
  const dir = Deno.makeTempDirSync();
  const w = new TensorBoardWriter(dir);
  w.log(3, { "actor/pg_loss": 0.5, "bad": NaN });
  w.close();
  const records = readRecords(Deno.readFileSync(w.path));
  assert.equal(records.length, 2);
  const text = new TextDecoder().decode(records[1]);
  assert.ok(text.includes("actor/pg_loss"));
  assert.ok(!text.includes("bad"), "non-finite scalars are dropped");
  // step field: tag (2 << 3 | 0) = 0x10 followed by varint 3
  const payload = encodeScalarEvent(0, 3, {});
  assert.deepEqual([...payload.subarray(9, 11)], [0x10, 3]);
  const corrupt = frameRecord(payload);
  corrupt[14] ^= 1;
  assert.throws(() => readRecords(corrupt), /bad payload checksum/);
  Deno.removeSync(dir, { recursive: true });
});
