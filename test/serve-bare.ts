import type { Subprocess } from "bun";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");

export interface Serving {
  readonly proc: Subprocess<"ignore", "ignore", "pipe">;
  /** http://127.0.0.1:PORT */
  readonly url: string;
  stop(): Promise<void>;
}

/** `keyturn serve` as a real process on a free port; resolves once it logs where it listens. */
export async function serve(args: string[]): Promise<Serving> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "--port", "0", "--log-format", "json", ...args], {
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
    env: { PATH: process.env.PATH },
  });
  const reader = proc.stderr.getReader();
  let seen = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`keyturn serve exited before listening:\n${seen}`);
    seen += new TextDecoder().decode(value);
    const line = seen
      .split("\n")
      .slice(0, -1)
      .find((l) => l.includes('"keyturn listening"'));
    if (line) {
      reader.releaseLock();
      // Keep draining stderr so the process never blocks on a full pipe.
      void proc.stderr.pipeTo(new WritableStream());
      const stop = async () => {
        proc.kill("SIGTERM");
        await proc.exited;
      };
      return { proc, url: JSON.parse(line).url as string, stop };
    }
  }
}
