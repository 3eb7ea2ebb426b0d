/**
 * `deno task test`: `deno test -A --parallel` on a WebGPU backend that exits cleanly.
 *
 * Without a setting, wgpu opens every backend it has, OpenGL (through EGL) included, even when it
 * hands out a Vulkan adapter. On Mesa's software drivers a `deno test` process that did so can abort
 * at exit after every test passed ("double free or corruption"): libEGL's exit-time destructors
 * free memory while the thread of a test module that is still ending frees its thread-specific
 * data in the same malloc arena (a core dump shows both). When a Vulkan, Metal or D3D12 adapter
 * exists, the tests therefore run with `DENO_WEBGPU_BACKEND` naming only those backends, and EGL is
 * never loaded. Without one (Mesa's GL driver alone: install `mesa-vulkan-drivers` for lavapipe)
 * they run on OpenGL, and the runner says so.
 *
 * Usage: `deno task test [path ...] [deno test flags]`: arguments go to `deno test` as they are. A
 * `DENO_WEBGPU_BACKEND` already set is kept.
 */

/** The backends without EGL, in wgpu's spelling for `DENO_WEBGPU_BACKEND`. */
export const NATIVE_BACKENDS = "vulkan,metal,dx12";

export const GL_NOTE = "no Vulkan, Metal or D3D12 adapter: the tests run on OpenGL (EGL). " +
  "On Mesa's drivers such a process can abort at exit after its tests passed; " +
  "install mesa-vulkan-drivers (lavapipe) to run them on Vulkan.";

/** True when an adapter comes back with only the given backends enabled. */
export async function hasAdapter(backends: string): Promise<boolean> {
  const probe = "const a = await navigator.gpu?.requestAdapter(); Deno.exit(a ? 0 : 1);";
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", probe],
    env: { DENO_WEBGPU_BACKEND: backends },
    stdout: "null",
    stderr: "null",
  }).output();
  return out.success;
}

export interface TestEnv {
  env: Record<string, string>; // added to the environment of `deno test`
  note?: string; // said before the tests start
}

/**
 * The environment for `deno test`: a backend already chosen is kept; else the native backends
 * when they give an adapter. Lavapipe probes for a Wayland display and complains on stderr (where
 * some tests read a command's messages) when XDG_RUNTIME_DIR is unset, so on Linux an unset one
 * gets a private empty folder, whichever backend runs.
 */
export function testEnv(
  options: {
    chosen?: string;
    nativeAdapter: boolean;
    xdgRuntimeDir?: string;
    tempDir: () => string;
  },
): TestEnv {
  const env: Record<string, string> = {};
  if (!options.chosen && options.nativeAdapter) env.DENO_WEBGPU_BACKEND = NATIVE_BACKENDS;
  if (!options.xdgRuntimeDir && Deno.build.os === "linux") env.XDG_RUNTIME_DIR = options.tempDir();
  return !options.chosen && !options.nativeAdapter ? { env, note: GL_NOTE } : { env };
}

async function main(args: string[]): Promise<number> {
  const chosen = Deno.env.get("DENO_WEBGPU_BACKEND");
  const { env, note } = testEnv({
    chosen,
    nativeAdapter: !chosen && await hasAdapter(NATIVE_BACKENDS),
    xdgRuntimeDir: Deno.env.get("XDG_RUNTIME_DIR"),
    tempDir: () => Deno.makeTempDirSync({ prefix: "webrl_xdg_" }),
  });
  if (note) console.error(`note: ${note}`);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "-A", "--parallel", ...args],
    env,
  }).spawn();
  const stop = () => child.kill("SIGINT");
  Deno.addSignalListener("SIGINT", stop);
  const status = await child.status;
  Deno.removeSignalListener("SIGINT", stop);
  if (env.XDG_RUNTIME_DIR) await Deno.remove(env.XDG_RUNTIME_DIR, { recursive: true });
  return status.code; // 128 + the signal's number when one ended it
}

if (import.meta.main) Deno.exit(await main(Deno.args));
