/** The compiled executable for tests that spawn it: dist/keyturn, built by build.ts once per test process. */
import { buildExecutable } from "../build";

let built: Promise<string> | null = null;

export function executable(): Promise<string> {
  return (built ??= buildExecutable());
}

/**
 * Reads a `keyturn serve --log-format json` process's stderr until it logs where it listens: that
 * URL, and the log read so far. The reader stays the caller's, to read on or to drain (a full pipe
 * would block the process).
 */
export async function untilListening(reader: { read(): Promise<{ done: boolean; value?: Uint8Array }> }): Promise<{ url: string; log: string }> {
  let log = "";
  for (;;) {
    const line = log
      .split("\n")
      .slice(0, -1)
      .find((l) => l.includes('"keyturn listening"'));
    if (line) return { url: String(JSON.parse(line).url), log };
    const { value, done } = await reader.read();
    if (done) throw new Error(`keyturn serve exited before listening:\n${log}`);
    log += new TextDecoder().decode(value);
  }
}
