/** Starts 5a's floor (records-floor-server.ts) on a records file, pinned to the server core as keyturn is. */
import { join } from "node:path";
import { CPUS, pinned } from "./tools";

export async function startRecordsFloor(recordsFile: string, port: number) {
  const proc = Bun.spawn(pinned(CPUS.server, [process.execPath, join(import.meta.dir, "records-floor-server.ts"), String(port), recordsFile]), {
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = proc.stdout.getReader();
  const first = await reader.read();
  if (!new TextDecoder().decode(first.value).includes("ready")) throw new Error("the records floor did not start");
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      proc.kill();
      await proc.exited;
    },
  };
}
