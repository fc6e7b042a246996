import { mkdtempSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toConfig } from "../src/config/config";
import { silentLogger, type Logger } from "../src/config/log";
import { VARIANTS, type VariantName } from "../src/config/variants";
import { compose } from "../src/compose";
import { Admin } from "../src/domain/admin/operator";
import { generateKeyFiles } from "../src/domain/keys";
import { createApp } from "../src/http/app";
import { createHash, randomBytes } from "node:crypto";

export const BASE = "http://localhost/api/v1";
export const BASE_URL = "https://licenses.example.com";

/** What this process's open descriptors name that are release tables' files in `dir` (release-table-rows.ts): removed ones end in " (deleted)". */
export function openReleaseTables(dir: string): string[] {
  return readdirSync("/proc/self/fd").flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(join(dir, ".release-table-")) ? [target] : [];
    } catch {
      // Closed between the listing and the read.
      return [];
    }
  });
}

export function tempDir(prefix = "keyturn-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A clock tests can move. */
export function testClock(start = Date.parse("2026-11-21T12:00:00Z")) {
  let now = start;
  const clock = () => now;
  return Object.assign(clock, {
    advance(ms: number) {
      now += ms;
    },
    set(ms: number) {
      now = ms;
    },
  });
}

/** A device hash as an installation makes it: SHA-256 of prefix + random identifier, base64url. */
export function deviceHash(variant: VariantName, id = randomBytes(16).toString("hex")): string {
  return createHash("sha256")
    .update(VARIANTS[variant].deviceTextPrefix + id)
    .digest("base64url");
}

export function device(variant: VariantName, extra: Record<string, unknown> = {}) {
  const product = VARIANTS[variant].products[0];
  return {
    hash: deviceHash(variant),
    name: "Office PC",
    platform: "win-x64",
    version: "1.0.0",
    ...(product ? { product } : {}),
    ...extra,
  };
}

export interface TestSite {
  readonly dir: string;
  readonly app: ReturnType<typeof createApp>;
  readonly admin: Admin;
  readonly clock: ReturnType<typeof testClock>;
  readonly composed: Awaited<ReturnType<typeof compose>>;
  request(method: string, path: string, opts?: { body?: unknown; token?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): Promise<void>;
}

/** A whole keyturn site in a temp dir: real SQLite file, real keys, the app driven by app.handle. */
export async function testSite(
  variant: VariantName,
  opts: {
    settings?: Record<string, string>;
    /** The TOML file's tables (`plans`), as readSettings hands them to toConfig. */
    tables?: Record<string, unknown>;
    withKey?: boolean;
    clock?: ReturnType<typeof testClock>;
    peerAddress?: (request: Request) => string | null;
    log?: Logger;
  } = {},
): Promise<TestSite> {
  const dir = tempDir();
  const keys = join(dir, "keys");
  if (opts.withKey !== false) generateKeyFiles(keys, VARIANTS[variant].defaultLicenseKid);
  const clock = opts.clock ?? testClock();
  const config = toConfig(
    {
      variant,
      "base-url": BASE_URL,
      data: join(dir, "data"),
      keys,
      releases: join(dir, "releases"),
      // Every test request comes from one address: budgets high enough that only rate-limit tests meet them.
      "rate-limit-signin": "1000000/60s",
      "rate-limit-api": "1000000/60s",
      ...opts.settings,
    },
    "admin",
    opts.tables,
  );
  const composed = await compose(config, {
    clock,
    log: opts.log ?? silentLogger,
    peerAddress: opts.peerAddress ?? (() => "203.0.113.7"),
  });
  const app = createApp(composed.services);
  const admin = new Admin(config.variant, composed.store, clock, composed.services.audit);
  return {
    dir,
    app,
    admin,
    clock,
    composed,
    request(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      let body: string | undefined;
      if (o.body !== undefined) {
        body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
        headers["content-type"] ??= "application/json";
      }
      return app.handle(new Request(BASE + path, { method, headers, body }));
    },
    async close() {
      await composed.store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function createLicense(site: TestSite, extra: Partial<Parameters<Admin["createLicense"]>[0]> = {}) {
  return site.admin.createLicense({
    licensee: "Ada Lovelace",
    organization: "Analytical Engines Ltd",
    plan: "pro",
    planTitle: "Professional",
    seats: 2,
    channels: ["stable"],
    expires: null,
    ...extra,
  });
}
