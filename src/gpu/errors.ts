/** Raised for anything the GPU runtime refuses or loses: no adapter, a limit, device loss. */
export class GpuError extends Error {
  override name = "GpuError";
}

/** Formats a byte count the way limits are usually quoted (MiB / GiB). */
export function formatBytes(n: number): string {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(2)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(2)} KiB`;
  return `${n} B`;
}
