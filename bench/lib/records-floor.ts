/** Starts 5a's floor (records-floor-server.ts) on a records file. */
import { join } from "node:path";
import { startPinnedServer } from "./tools";

export function startRecordsFloor(recordsFile: string, port: number) {
  return startPinnedServer("the records floor", [process.execPath, join(import.meta.dir, "records-floor-server.ts"), String(port), recordsFile], port);
}
