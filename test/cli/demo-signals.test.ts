import { afterAll, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers";

// Issue 21, item 13f: the demo printed its banner (and the server listened) before SIGTERM and SIGINT
// were handled: a Ctrl-C then killed it mid-write instead of stopping it in order.
const root = join(import.meta.dir, "..", "..");
const main = join(root, "src", "main.ts");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

for (const signal of ["SIGTERM", "SIGINT"] as const)
  test(`${signal} as soon as the server listens (before the banner is made) stops the demo in order: exit 0, "stopped" logged`, async () => {
    const data = tempDir("keyturn-demo-signal-");
    dirs.push(data);
    const proc = Bun.spawn([process.execPath, main, "serve", "--demo", "--port", "0", "--data", data, "--log-format", "json"], {
      cwd: root,
      stdout: "ignore",
      stderr: "pipe",
    });
    try {
      let log = "";
      const reader = proc.stderr.getReader();
      // The "transport" line is written once the listener is up, before the demo's licence and token are made.
      while (!log.includes('"msg":"transport"')) {
        const { value, done } = await reader.read();
        if (done) break;
        log += new TextDecoder().decode(value);
      }
      proc.kill(signal);
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        log += new TextDecoder().decode(value);
      }
      expect({ exit: await proc.exited, signal: proc.signalCode }).toEqual({ exit: 0, signal: null });
      expect(log).toContain('"msg":"stopped"');
    } finally {
      proc.kill("SIGKILL");
    }
  });
