/**
 * What answering electron-updater's multi-range requests costs (src/http/file-serving.ts,
 * serveFileRanges), in-process on a 64 MiB file: the whole body read from the response, medians of
 * 7 rounds. Run: bun bench/feeds-multirange.ts
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serveFile, serveFileRanges } from "../src/http/file-serving";

const SIZE = 64 << 20;
const dir = mkdtempSync(join(tmpdir(), "keyturn-bench-ranges-"));
const path = join(dir, "installer.exe");
writeFileSync(path, Buffer.alloc(SIZE, 7));
const etag = '"bench"';

/** `count` ranges of `bytes` each, spread evenly over the file (as a differential update's changed blocks). */
const ranges = (count: number, bytes: number) =>
  `bytes=${Array.from({ length: count }, (_, i) => {
    const start = Math.floor((i * SIZE) / count);
    return `${start}-${start + bytes - 1}`;
  }).join(", ")}`;

async function median(label: string, answer: () => Response): Promise<void> {
  const times: number[] = [];
  let length = 0;
  for (let round = 0; round < 7; round++) {
    const t = performance.now();
    length = (await answer().arrayBuffer()).byteLength;
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(`${label.padEnd(44)} ${(length / 1024).toFixed(0).padStart(8)} KiB  ${times[3]!.toFixed(2).padStart(8)} ms`);
}

const request = (range?: string) => new Request("http://localhost/", range ? { headers: { range } } : {});
await median("whole file (200)", () => serveFile(request(), path, SIZE, etag, "installer.exe"));
await median("one range of 4 MiB (206)", () => serveFileRanges(request("bytes=0-4194303"), path, SIZE, etag, "installer.exe"));
await median("10 ranges of 64 KiB (multipart)", () => serveFileRanges(request(ranges(10, 64 << 10)), path, SIZE, etag, "installer.exe"));
await median("1000 ranges of 4 KiB (multipart)", () => serveFileRanges(request(ranges(1000, 4 << 10)), path, SIZE, etag, "installer.exe"));
await median("1000 ranges of 64 KiB (multipart)", () => serveFileRanges(request(ranges(1000, 64 << 10)), path, SIZE, etag, "installer.exe"));
rmSync(dir, { recursive: true, force: true });
