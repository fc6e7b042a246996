/**
 * The runtime's own floor: a bare Bun.serve answering every request with the same manifest bytes
 * from memory (no routing, no auth, no log), pinned to the server core like keyturn and nginx. No
 * program on Bun.serve can answer faster; keyturn's ratio to it is what keyturn's own work costs.
 */
import { CPUS, pinned } from "./tools";

const SERVER = `
const [file, port] = process.argv.slice(1);
const body = new Uint8Array(await Bun.file(file).arrayBuffer());
Bun.serve({ hostname: "127.0.0.1", port: Number(port), fetch: () => new Response(body, { headers: { "content-type": "application/json" } }) });
console.log("ready");
`;

export async function startBunFloor(file: string, port: number) {
  const proc = Bun.spawn(pinned(CPUS.server, [process.execPath, "-e", SERVER, file, String(port)]), { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const first = await reader.read();
  if (!new TextDecoder().decode(first.value).includes("ready")) throw new Error("the Bun.serve floor did not start");
  reader.releaseLock();
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      proc.kill();
      await proc.exited;
    },
  };
}
