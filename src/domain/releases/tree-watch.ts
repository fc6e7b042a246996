import { watch } from "node:fs";

/** Watches a tree recursively: `changed` with the name of what changed, `failed` when the watch stops working. */
export type WatchTree = (root: string, changed: (name: string) => void, failed: (error: unknown) => void) => { close(): void };

export const watchTree: WatchTree = (root, changed, failed) => {
  const watcher = watch(root, { recursive: true }, (_event, filename) => changed(String(filename ?? "")));
  watcher.on("error", failed);
  return watcher;
};

/** Runs `run` every `ms` until the returned function is called; injected by tests so they move time themselves. */
export type Every = (ms: number, run: () => void) => () => void;

export const systemEvery: Every = (ms, run) => {
  const timer = setInterval(run, ms);
  timer.unref();
  return () => clearInterval(timer);
};

/** How changes to the release tree are noticed: watched, or (the watch impossible) by periodic re-scans. */
export type ChangeDetection =
  | { readonly mode: "watch" }
  | { readonly mode: "periodic"; readonly everyMs: number; readonly reason: string }
  | { readonly mode: "none" };

/** Why a watch failed, in a few words of our own (never the raw message: it may carry control characters). */
export function watchFailureReason(error: unknown): string {
  const code = String((error as NodeJS.ErrnoException)?.code ?? "");
  if (code === "ENOSPC") return "inotify watches exhausted (raise fs.inotify.max_user_watches)";
  if (code === "EMFILE") return "too many inotify instances or open files (EMFILE)";
  return /^E[A-Z]+$/.test(code) ? `the watch failed (${code})` : "the watch failed";
}
