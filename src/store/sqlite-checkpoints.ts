import type { Database } from "bun:sqlite";
import type { CheckpointerStart } from "./sqlite-checkpointer";

/** How often the worker copies the WAL back into the database file. */
const CHECKPOINT_EVERY_MS = 500;
/**
 * The WAL size (pages of 4 KiB: 256 MiB) at which SQLite's own checkpoint runs again inside a
 * commit: the bound on the WAL's growth should the worker fall behind a burst of writes.
 */
const AUTOCHECKPOINT_PAGES = 65_536;

// The compiled executable holds the worker as an entrypoint of its own (build.ts), at its path under src/.
const WORKER_URL = new URL(import.meta.url.startsWith("file:///$bunfs/") ? "./store/sqlite-checkpointer.ts" : "./sqlite-checkpointer.ts", import.meta.url);

/**
 * SQLite's automatic checkpoint runs inside the commit that pushes the WAL past 1,000 pages: that
 * request, and with one thread every request behind it, waits while pages all over the file are
 * written back and the file synced (tens to hundreds of milliseconds at a million licenses). A
 * worker thread checkpoints instead, on its own connection; commits only append to the WAL.
 */
export function startCheckpoints(db: Database): { stop(): Promise<void> } {
  db.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  const worker = new Worker(WORKER_URL, { smol: true });
  worker.unref();
  // Without the worker, SQLite's own checkpoints keep the WAL small again.
  worker.onerror = () => db.exec("PRAGMA wal_autocheckpoint = 1000");
  worker.postMessage({ file: db.filename, everyMs: CHECKPOINT_EVERY_MS } satisfies CheckpointerStart);
  let stopped: Promise<void> | null = null;
  return {
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        // Its connection closes first, so the store's, closing last, checkpoints and removes the WAL.
        const done = () => {
          worker.terminate();
          resolve();
        };
        worker.onmessage = done;
        worker.onerror = done;
        worker.postMessage("stop");
      })),
  };
}
