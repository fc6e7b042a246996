import { afterAll, expect, test } from "bun:test";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { transportMode } from "../../src/cli/transport";
import { toConfig } from "../../src/config/config";
import { ConfigError } from "../../src/config/parse";
import { BASE_URL, tempDir } from "../helpers";

const dir = tempDir();
mkdirSync(join(dir, "keys"));
mkdirSync(join(dir, "releases"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const serve = (extra: Record<string, string>) =>
  toConfig({ variant: "gamma", "base-url": BASE_URL, data: join(dir, "data"), keys: join(dir, "keys"), releases: join(dir, "releases"), ...extra }, "serve");

test("plain HTTP off loopback needs --allow-plain-http, and the start-up line says why", () => {
  expect(() => serve({ host: "0.0.0.0" })).toThrow(ConfigError);
  expect(transportMode(serve({ host: "0.0.0.0", "allow-plain-http": "true" }))).toEqual({
    mode: "http",
    why: "--allow-plain-http: plain HTTP on 0.0.0.0, for a TLS-terminating proxy in front",
  });
  expect(transportMode(serve({})).mode).toBe("http-loopback");
  expect(transportMode(serve({ host: "::1" })).mode).toBe("http-loopback");
});

test("idle and shutdown timeouts: defaults, and Bun's 255 s ceiling on the idle timeout", () => {
  const c = serve({});
  expect([c.idleTimeoutSeconds, c.shutdownTimeoutSeconds]).toEqual([10, 10]);
  expect(serve({ "idle-timeout": "4m", "shutdown-timeout": "1m" }).idleTimeoutSeconds).toBe(240);
  expect(() => serve({ "idle-timeout": "5m" })).toThrow("at most 255s");
  expect(() => serve({ "shutdown-timeout": "soon" })).toThrow(ConfigError);
});
