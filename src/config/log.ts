import { writeSync } from "node:fs";
import { escapeControl, escapeJsonControl } from "./text";

/**
 * One line per event, JSON or text, on stderr. Callers never pass secrets (tokens, keys, nonces).
 * Control characters in messages and fields (a device name, a folder name) are escaped in both
 * formats, so a line can neither act on a terminal nor be split into forged lines.
 */
export type Level = "debug" | "info" | "warn" | "error";
const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  log(level: Level, msg: string, fields?: Record<string, unknown>): void;
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

// Many lines share a millisecond under load; formatting the time once for them is measurable.
let lastMs = -1;
let lastIso = "";
function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

export function createLogger(format: "json" | "text", minLevel: Level, write: (line: string) => void = stderrLines()): Logger {
  const min = RANK[minLevel];
  const log = (level: Level, msg: string, fields: Record<string, unknown> = {}) => {
    if (RANK[level] < min) return;
    const time = isoNow();
    if (format === "json") write(escapeJsonControl(JSON.stringify({ time, level, msg, ...fields })));
    else {
      const rest = Object.entries(fields)
        .map(([k, v]) => `${escapeControl(k)}=${typeof v === "string" && !/\s/.test(v) ? escapeControl(v) : escapeJsonControl(String(JSON.stringify(v)))}`)
        .join(" ");
      write(`${time} ${level.toUpperCase().padEnd(5)} ${escapeControl(msg)}${rest ? " " + rest : ""}`);
    }
  };
  return {
    log,
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
  };
}

/** For tests and commands that must stay quiet. */
export const silentLogger: Logger = createLogger("json", "error", () => {});

/**
 * Lines to stderr, gathered during one turn of the event loop and written at its end in one
 * system call: a write per line (one per request) cost as much as the request itself. Lines still
 * waiting when the process exits are written then.
 */
function stderrLines(): (line: string) => void {
  let pending: string[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    const bytes = Buffer.from(pending.join(""));
    pending = [];
    for (let written = 0; written < bytes.length; ) {
      try {
        written += writeSync(2, bytes, written);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EAGAIN") return;
      }
    }
  };
  process.on("exit", flush);
  return (line) => {
    if (pending.push(line + "\n") === 1) setImmediate(flush);
  };
}
