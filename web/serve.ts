/**
 * A tiny static file server for the built page (default `dist/web/`), on localhost only.
 *
 *   deno run --allow-net=127.0.0.1 --allow-read web/serve.ts [--port 8787] [--dir dist/web]
 */

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json",
  map: "application/json",
  wgsl: "text/plain; charset=utf-8",
  safetensors: "application/octet-stream",
  png: "image/png",
  svg: "image/svg+xml",
};

export interface ServeOptions {
  port?: number;
  dir?: string;
  /** Called once listening, with the page's URL. */
  onListen?: (url: string) => void;
  signal?: AbortSignal;
}

/** Serves `dir` on 127.0.0.1; resolves the server (shut it down with `server.shutdown()`). */
export function serveStatic(options: ServeOptions = {}): Deno.HttpServer {
  const root = (options.dir ?? new URL("../dist/web", import.meta.url).pathname).replace(/\/$/, "");
  return Deno.serve({
    hostname: "127.0.0.1",
    port: options.port ?? 8787,
    signal: options.signal,
    onListen: ({ hostname, port }) => options.onListen?.(`http://${hostname}:${port}/`),
  }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    // Refuse anything that could climb out of the served folder.
    if (path.split("/").includes("..")) return new Response("bad path", { status: 400 });
    const file = `${root}${path.endsWith("/") ? `${path}index.html` : path}`;
    try {
      const data = await Deno.readFile(file);
      const ext = file.slice(file.lastIndexOf(".") + 1);
      return new Response(data, {
        headers: {
          "content-type": TYPES[ext] ?? "application/octet-stream",
          "cache-control": "no-store",
        },
      });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return new Response("not found", { status: 404 });
      return new Response(String(e), { status: 500 });
    }
  });
}

if (import.meta.main) {
  const arg = (name: string) => {
    const i = Deno.args.indexOf(name);
    return i >= 0 ? Deno.args[i + 1] : undefined;
  };
  const port = Number(arg("--port") ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port must be an integer in [0, 65535], got ${arg("--port")}`);
  }
  serveStatic({ port, dir: arg("--dir"), onListen: (url) => console.log(`serving ${url}`) });
}
