/**
 * Streaming multiprocessors (compute units) of GPUs the GEMM split policy knows by name. WebGPU
 * does not expose the count, yet a product's last wave of workgroups decides its time: on an
 * H100 a product of 266 128x128 blocks takes 1.7x as long as one of 264 (two such blocks run per
 * multiprocessor at once). Figures from the vendors' data sheets; an unknown adapter gives null
 * and the policy falls back to a rule that needs no count.
 */
const TABLE: [RegExp, number][] = [
  [/\bH[18]00\b.*\bPCIe\b/i, 114],
  [/\bGH200\b|\bH200\b|\bH[18]00\b/i, 132],
  [/\bA100\b|\bA800\b/i, 108],
  [/\bL40S?\b/i, 142],
  [/\bL4\b/i, 58],
  [/\bA10G\b/i, 80],
  [/\bA10\b/i, 72],
  [/RTX 4090\b/i, 128],
  [/RTX 3090\b/i, 82],
];

/** The multiprocessor count of the adapter described by `name`, or null when unknown. */
export function multiprocessorCount(name: string): number | null {
  for (const [pattern, count] of TABLE) if (pattern.test(name)) return count;
  return null;
}
