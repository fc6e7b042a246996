/**
 * Worker entry (started by sqlite-checkpoints.ts; its own entrypoint in build.ts): copies the WAL
 * back into the database file on a timer, on its own connection and thread, so neither a commit
 * nor the serving thread ever waits for those writes and the file's sync.
 */
import { Database, type Statement } from "bun:sqlite";

export interface CheckpointerStart {
  readonly file: string;
  readonly everyMs: number;
}

declare const self: Worker;
let db: Database | null = null;
let checkpoint: Statement | null = null;
let timer: Timer | null = null;

self.onmessage = ({ data }: MessageEvent<CheckpointerStart | "stop">) => {
  if (data === "stop") {
    if (timer) clearInterval(timer);
    // A statement left unfinalized would keep the connection (and so the WAL) open after close().
    checkpoint?.finalize();
    db?.close();
    self.postMessage("stopped");
    return;
  }
  db = new Database(data.file);
  // PASSIVE never waits for readers or the writer: it copies what it can and tries again next time.
  checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  timer = setInterval(() => checkpoint!.run(), data.everyMs);
};
