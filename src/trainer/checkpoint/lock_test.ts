import assert from "node:assert/strict";
import { acquireLock, hostName, LOCK_FILE, LockError, releaseLocks } from "./lock.ts";

function writeLock(root: string, info: Record<string, unknown>): void {
  Deno.writeTextFileSync(`${root}/${LOCK_FILE}`, JSON.stringify(info));
}

Deno.test("the lock keeps out a live owner's folder and names it; re-taking our own is fine", () => {
  const root = Deno.makeTempDirSync();
  const lines: string[] = [];
  acquireLock(root, (l) => lines.push(l));
  const mine = JSON.parse(Deno.readTextFileSync(`${root}/${LOCK_FILE}`));
  assert.equal(mine.pid, Deno.pid);
  assert.equal(mine.host, hostName());
  acquireLock(root, (l) => lines.push(l)); // same process: re-entrant
  releaseLocks();
  assert.throws(() => Deno.statSync(`${root}/${LOCK_FILE}`), Deno.errors.NotFound);

  // Another host: its liveness cannot be checked here, so the lock holds.
  writeLock(root, { pid: 1, host: "elsewhere", started: "2030-01-01T00:00:00Z" });
  assert.throws(
    () => acquireLock(root, () => {}),
    (e: Error) =>
      e instanceof LockError &&
      /pid 1 on host elsewhere, started 2030-01-01T00:00:00Z/.test(e.message) &&
      e.message.includes(`delete ${root}/${LOCK_FILE}`),
  );
  assert.deepEqual(lines, []);
  Deno.removeSync(root, { recursive: true });
});

Deno.test("a lock left by a dead process (or unreadable) is taken over with a notice", async () => {
  const root = Deno.makeTempDirSync();
  const child = new Deno.Command("true").spawn();
  await child.status;
  writeLock(root, { pid: child.pid, host: hostName(), started: "2030-01-01T00:00:00Z" });
  const lines: string[] = [];
  acquireLock(root, (l) => lines.push(l));
  assert.match(lines[0], new RegExp(`taking over .*${LOCK_FILE} from pid ${child.pid}`));
  assert.equal(JSON.parse(Deno.readTextFileSync(`${root}/${LOCK_FILE}`)).pid, Deno.pid);
  releaseLocks();
  Deno.writeTextFileSync(`${root}/${LOCK_FILE}`, "{not json");
  acquireLock(root, (l) => lines.push(l));
  assert.match(lines[1], /replacing the unreadable lock file/);
  releaseLocks();
  assert.deepEqual([...Deno.readDirSync(root)], []);
  Deno.removeSync(root, { recursive: true });
});
