/**
 * Draws the layer rule of tools/layers.ts as docs/layers.svg: one row per rank, top to bottom,
 * each folder a box with its one-line role. The picture is generated from LAYERS, so it cannot
 * drift from the rule the check enforces (`deno run -A tools/layers_svg.ts` rewrites it; a test
 * compares).
 */
import { LAYERS } from "./layers.ts";

/** One line per folder, shown in its box. */
export const ROLES: Record<string, string> = {
  cli: "one thin file per task",
  trainer: "fit(), stages/, SFT, checkpoints, generate, eval",
  distributed: "NATS jobs, weights, worker",
  config: "schema, YAML, overrides, checks",
  rollout: "generation engine, GPU sampler",
  data: "parquet, prompt builder, loader, tasks",
  algos: "advantages, KL, losses (CPU ref + GPU ops)",
  reward: "scorers, reward manager, sandbox",
  tracking: "loggers, progress",
  nn: "decoders, critic, AdamW",
  io: "safetensors, HF folders, tokenizers",
  tensor: "Tensor, autograd, ops, PRNG, registries",
  gpu: "device, pools, pipelines, recorder",
};

const BOX_W = 250, BOX_H = 46, GAP_X = 16, ROW_H = 74, PAD = 20;

function escape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function layersSvg(): string {
  const ranks = [...new Set(Object.values(LAYERS))].sort((a, b) => b - a);
  const rows = ranks.map((r) => Object.keys(LAYERS).filter((k) => LAYERS[k] === r).sort());
  const widest = Math.max(...rows.map((r) => r.length));
  const width = PAD * 2 + widest * BOX_W + (widest - 1) * GAP_X;
  const height = PAD * 2 + rows.length * ROW_H + 24;
  const parts: string[] = [];
  rows.forEach((row, i) => {
    const y = PAD + i * ROW_H;
    const rowW = row.length * BOX_W + (row.length - 1) * GAP_X;
    const x0 = (width - rowW) / 2;
    if (i > 0) {
      parts.push(
        `<line x1="${width / 2}" y1="${y - ROW_H + BOX_H}" x2="${width / 2}" y2="${y - 4}" ` +
          `stroke="#888" stroke-width="2" marker-end="url(#down)"/>`,
      );
    }
    row.forEach((name, j) => {
      const x = x0 + j * (BOX_W + GAP_X);
      parts.push(
        `<rect x="${x}" y="${y}" width="${BOX_W}" height="${BOX_H}" rx="6" fill="#eef3fb" ` +
          `stroke="#4a6fa5"/>`,
        `<text x="${x + BOX_W / 2}" y="${y + 19}" text-anchor="middle" font-weight="bold">` +
          `src/${name}/ (${LAYERS[name]})</text>`,
        `<text x="${x + BOX_W / 2}" y="${y + 36}" text-anchor="middle" font-size="11" ` +
          `fill="#444">${escape(ROLES[name] ?? "")}</text>`,
      );
    });
  });
  parts.push(
    `<text x="${PAD}" y="${height - PAD}" font-size="11" fill="#444">Imports point down only, ` +
      `through each folder's mod.ts; web/, test/, bench/ sit on top; src/testing serves tests.` +
      `</text>`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `font-family="sans-serif" font-size="13">`,
    `<defs><marker id="down" markerWidth="10" markerHeight="10" refX="5" refY="8" ` +
    `orient="0"><path d="M0,0 L10,0 L5,8 z" fill="#888"/></marker></defs>`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...parts,
    `</svg>`,
    "",
  ].join("\n");
}

if (import.meta.main) {
  const path = new URL("../docs/layers.svg", import.meta.url);
  await Deno.writeTextFile(path, layersSvg());
  console.log(`wrote ${path.pathname}`);
}
