/// <reference lib="dom" />
/** Files in and out of the page: picked or dropped folders, and downloads of what the run made. */
import type { PickedFile } from "./protocol.ts";

/** Files from `<input type=file webkitdirectory>`, with their paths inside the chosen folder. */
export function pickedFiles(list: FileList): PickedFile[] {
  return Array.from(list, (file) => ({ path: file.webkitRelativePath || file.name, file }));
}

interface Entry {
  isFile: boolean;
  isDirectory: boolean;
  fullPath: string;
  file?(ok: (f: File) => void, fail: (e: unknown) => void): void;
  createReader?(): { readEntries(ok: (e: Entry[]) => void, fail: (e: unknown) => void): void };
}

async function walk(entry: Entry, out: PickedFile[]): Promise<void> {
  if (entry.isFile && entry.file) {
    const file = await new Promise<File>((ok, fail) => entry.file!(ok, fail));
    out.push({ path: entry.fullPath.replace(/^\//, ""), file });
    return;
  }
  if (!entry.isDirectory || !entry.createReader) return;
  const reader = entry.createReader();
  // readEntries hands out a directory in chunks until it returns an empty list.
  while (true) {
    const batch = await new Promise<Entry[]>((ok, fail) => reader.readEntries(ok, fail));
    if (batch.length === 0) break;
    for (const e of batch) await walk(e, out);
  }
}

/** Every file of a drop: whole folders (walked), or loose files. */
export async function droppedFiles(dt: DataTransfer): Promise<PickedFile[]> {
  const entries: Entry[] = [];
  for (const it of Array.from(dt.items)) {
    const e = (it as unknown as { webkitGetAsEntry?(): Entry | null }).webkitGetAsEntry?.();
    if (e) entries.push(e);
  }
  const out: PickedFile[] = [];
  if (entries.length > 0) {
    for (const e of entries) await walk(e, out);
    return out;
  }
  return Array.from(dt.files, (file) => ({ path: file.name, file }));
}

/** Starts a browser download. */
export function download(data: Blob | Uint8Array, fileName: string, type = "application/zip") {
  const blob = data instanceof Blob ? data : new Blob([data as BlobPart], { type });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = fileName;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Metrics as JSON Lines, one `{"step": n, ...}` object per logged record (NaN as null). */
export function metricsJsonl(points: { step: number; metrics: Record<string, number> }[]): string {
  return points.map((p) => JSON.stringify({ step: p.step, ...p.metrics })).join("\n") + "\n";
}
