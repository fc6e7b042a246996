import { join } from "node:path";
import { rmSync } from "node:fs";
import { toConfig } from "../../src/config/config";
import { createLogger, type Logger } from "../../src/config/log";
import { compose } from "../../src/compose";
import { createApp } from "../../src/http/app";
import { tempDir, testClock } from "../helpers";
import { MIRROR_TOKEN, type Vendor } from "./vendor";

/** A mirror driven in-process (app.handle), with a movable clock, following `feedUrl`. */
export async function mirrorSite(
  vendor: Vendor,
  feedUrl: string,
  o: {
    settings?: Record<string, string>;
    clock?: ReturnType<typeof testClock>;
    dir?: string;
    log?: Logger;
    maxEntries?: number;
    requestTimeoutMs?: number;
  } = {},
) {
  const dir = o.dir ?? tempDir("keyturn-mirror-");
  const clock = o.clock ?? testClock();
  const lines: Record<string, unknown>[] = [];
  const log = o.log ?? createLogger("json", "debug", (line) => lines.push(JSON.parse(line)));
  const config = toConfig(
    {
      variant: vendor.variant,
      "base-url": "https://mirror.example.com",
      data: join(dir, "data"),
      keys: vendor.mirrorKeys,
      releases: vendor.tree.root,
      "mirror-of": feedUrl,
      "mirror-token": MIRROR_TOKEN,
      "mirror-poll": "1s",
      "rate-limit-signin": "1000000/60s",
      "rate-limit-api": "1000000/60s",
      ...o.settings,
    },
    "serve",
  );
  let jitter = 0.5;
  const composed = await compose(config, {
    clock,
    log,
    peerAddress: () => "203.0.113.9",
    random: () => jitter,
    mirrorRequestTimeoutMs: o.requestTimeoutMs ?? 300,
    mirrorMaxEntries: o.maxEntries,
  });
  await composed.services.releases.ready();
  const app = createApp(composed.services);
  return {
    dir,
    clock,
    lines,
    composed,
    app,
    follower: composed.mirror!,
    setJitter(j: number) {
      jitter = j;
    },
    get(path: string, token?: string, headers: Record<string, string> = {}) {
      return app.handle(new Request(`http://localhost/api/v1${path}`, { headers: { ...headers, ...(token ? { authorization: `Bearer ${token}` } : {}) } }));
    },
    post(path: string, body: unknown, token?: string) {
      return app.handle(
        new Request(`http://localhost/api/v1${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: JSON.stringify(body),
        }),
      );
    },
    async close(keepDir = false) {
      await composed.mirror?.stop();
      composed.services.releases.close();
      await composed.store.close();
      if (!keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
