import assert from "node:assert/strict";
import { GL_NOTE, hasAdapter, NATIVE_BACKENDS, testEnv } from "./run_tests.ts";

const tempDir = () => "/tmp/xdg_for_test";

Deno.test("a chosen backend is kept; without a native adapter the tests run on GL, saying so", () => {
  const xdgRuntimeDir = "/run/user/1";
  assert.deepEqual(testEnv({ chosen: "gl", nativeAdapter: true, xdgRuntimeDir, tempDir }), {
    env: {},
  });
  assert.deepEqual(testEnv({ nativeAdapter: false, xdgRuntimeDir, tempDir }), {
    env: {},
    note: GL_NOTE,
  });
  assert.deepEqual(testEnv({ nativeAdapter: true, xdgRuntimeDir, tempDir }), {
    env: { DENO_WEBGPU_BACKEND: NATIVE_BACKENDS },
  });
  if (Deno.build.os === "linux") {
    for (const chosen of ["vulkan", undefined]) {
      const { env } = testEnv({ chosen, nativeAdapter: true, tempDir });
      assert.equal(env.XDG_RUNTIME_DIR, tempDir(), `chosen ${chosen}`);
    }
  }
});

/** The shared libraries mapped into a fresh process that opened a GPU device. */
async function librariesAfterOpening(env: Record<string, string>): Promise<string> {
  const code = "const a = await navigator.gpu.requestAdapter(); await a?.requestDevice();" +
    "console.log(Deno.readTextFileSync('/proc/self/maps'));";
  const out = await new Deno.Command(Deno.execPath(), { args: ["eval", code], env, stderr: "null" })
    .output();
  return new TextDecoder().decode(out.stdout);
}

Deno.test({
  name: "with a native adapter, test processes never load EGL",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const native = await hasAdapter(NATIVE_BACKENDS);
    const { env } = testEnv({ nativeAdapter: native, tempDir });
    const maps = await librariesAfterOpening(env);
    if (native) assert.doesNotMatch(maps, /libEGL/, "EGL loaded with the native backends only");
    else console.log("no native adapter here: the GL fallback is in use");
    // The check can see EGL: a GL adapter, where there is one, loads it.
    if (await hasAdapter("gl")) {
      assert.match(await librariesAfterOpening({ DENO_WEBGPU_BACKEND: "gl" }), /libEGL/);
    }
  },
});

Deno.test("the runner passes arguments to deno test and returns its exit code", async () => {
  const dir = Deno.makeTempDirSync();
  Deno.writeTextFileSync(`${dir}/pass_test.ts`, `Deno.test("one", () => {});`);
  Deno.writeTextFileSync(
    `${dir}/fail_test.ts`,
    `Deno.test("bad", () => { throw new Error("no"); });`,
  );
  const run = async (...args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./run_tests.ts", import.meta.url).pathname, ...args],
      cwd: dir,
      env: { NO_COLOR: "1" },
    }).output();
    return { code: out.code, text: new TextDecoder().decode(out.stdout) };
  };
  try {
    const all = await run();
    assert.equal(all.code, 1, all.text);
    assert.match(all.text, /1 passed \| 1 failed/);
    const one = await run("pass_test.ts");
    assert.equal(one.code, 0, one.text);
    assert.match(one.text, /1 passed \| 0 failed/);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
