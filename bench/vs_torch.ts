/**
 * Our GRPO step against PyTorch + transformers on the same GPU, in one command: runs
 * bench/grpo_step_device.ts (Qwen2.5-0.5B shape, 64 samples of 128 + 256 tokens, micro-batches of
 * `--micro` samples) and the peer script (HF `generate` and a PPO-like fwd + bwd + AdamW step of
 * 16 x 384 tokens, fp32 and bf16), then prints one line per ratio and a Markdown table row set.
 *
 *   deno run -A bench/vs_torch.ts [--peer=.device/torch_peer.py] [--micro=16] [--steps=3]
 *     [--keep-logits-gb=G]   (actor.keep_logits_gb: the peer keeps its logits whole)
 *
 * The peer is the Python script the GPU machine's preparation ships (see bench/README.md); any
 * script printing the same JSON lines (`fig: hf_generate | torch_ppo_update_step`, `dtype`,
 * `tok_per_s`) will do.
 */
const opt = (name: string, d: string) =>
  Deno.args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? d;
const peer = opt("peer", ".device/torch_peer.py");
const micro = opt("micro", "16"), steps = opt("steps", "3");

type Line = Record<string, unknown>;

async function jsonLines(cmd: string, args: string[]): Promise<Line[]> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "inherit" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} exited with ${out.code}:\n${text}`);
  return text.split("\n").flatMap((l) => {
    if (!l.startsWith("{")) return [];
    try {
      return [JSON.parse(l) as Line];
    } catch {
      return [];
    }
  });
}

const ours = await jsonLines(Deno.execPath(), [
  "run",
  "-A",
  ...(Deno.args.includes("--cached-only") ? ["--cached-only"] : []),
  new URL("./grpo_step_device.ts", import.meta.url).pathname,
  `--micro=${micro}`,
  `--steps=${steps}`,
  `--keep-logits-gb=${opt("keep-logits-gb", "0")}`,
]);
const theirs = await jsonLines("python3", [peer]);

const lastStep = ours.filter((l) => l.fig === "grpo_step").at(-1);
if (!lastStep) throw new Error("bench/grpo_step_device.ts printed no grpo_step line");
const peerFig = (fig: string, dtype: string) => {
  const l = theirs.find((x) => x.fig === fig && String(x.dtype).endsWith(dtype));
  if (!l) throw new Error(`${peer} printed no ${fig} line for ${dtype}`);
  return Number(l.tok_per_s);
};
const rows: [string, number, string, number][] = [
  [
    "update tok/s",
    Number(lastStep.update_tok_per_s),
    "PyTorch fp32",
    peerFig(
      "torch_ppo_update_step",
      "float32",
    ),
  ],
  [
    "update tok/s",
    Number(lastStep.update_tok_per_s),
    "PyTorch bf16",
    peerFig(
      "torch_ppo_update_step",
      "bfloat16",
    ),
  ],
  [
    "gen tok/s",
    Number(lastStep.gen_tok_per_s),
    "HF generate fp32",
    peerFig(
      "hf_generate",
      "float32",
    ),
  ],
  [
    "gen tok/s",
    Number(lastStep.gen_tok_per_s),
    "HF generate bf16",
    peerFig(
      "hf_generate",
      "bfloat16",
    ),
  ],
];
const adapter = ours.find((l) => typeof l.adapter === "string")?.adapter ?? "?";
console.log(JSON.stringify({ fig: "vs_torch_step", adapter, micro: Number(micro), ...lastStep }));
for (const [what, us, ref, them] of rows) {
  const ratio = Math.round((us / them) * 100) / 100;
  console.log(
    JSON.stringify({ fig: "vs_torch", what, ours: us, reference: ref, theirs: them, ratio }),
  );
}
console.log(`\n| what | ours | reference | theirs | ratio |\n| --- | --- | --- | --- | --- |`);
for (const [what, us, ref, them] of rows) {
  console.log(`| ${what} | ${us} | ${ref} | ${them} | ${(us / them).toFixed(2)} |`);
}
