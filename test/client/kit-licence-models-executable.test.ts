/**
 * Trials and metered use end to end as an operator and a program meet them: the compiled
 * executable serving with a TOML file that switches trials on, a licence with a meter made by its
 * own CLI (`license create --meter`), and the client kit starting a trial, converting it with a
 * bought key and spending from the meter until usage_limit.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildExecutable } from "../../build";
import { deviceHash, KeyturnClient, KeyturnClientError, type Device } from "../../src/client";
import { VARIANTS } from "../../src/config/variants";
import { generateKeyFiles } from "../../src/domain/keys";
import { tempDir } from "../helpers";
import { untilListening } from "../executable";
import { ISSUER, spkiOf } from "./kit-site";

const dir = tempDir("keyturn-kit-models-");
const kid = VARIANTS.alpha.defaultLicenseKid;
let exe: string;
let proc: Bun.Subprocess;
let url: string;
const common = () => ["--variant", "alpha", "--data", join(dir, "data"), "--config", join(dir, "keyturn.toml")];

beforeAll(async () => {
  exe = await buildExecutable(join(dir, "keyturn"));
  generateKeyFiles(join(dir, "keys"), kid);
  mkdirSync(join(dir, "releases"));
  writeFileSync(join(dir, "keyturn.toml"), 'trial-plan = "eval"\ntrial-length = "7d"\n\n[plans.eval]\ntitle = "Pro (trial)"\nchannels = ["stable"]\n');
  proc = Bun.spawn(
    [exe, "serve", ...common(), "--base-url", ISSUER, "--keys", join(dir, "keys"), "--releases", join(dir, "releases"), "--port", "0", "--log-format", "json"],
    { stdout: "ignore", stderr: "pipe", stdin: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } },
  );
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  ({ url } = await untilListening(reader));
  reader.releaseLock();
  void (proc.stderr as ReadableStream<Uint8Array>).pipeTo(new WritableStream());
}, 180_000);

afterAll(async () => {
  proc?.kill("SIGTERM");
  await proc?.exited;
  rmSync(dir, { recursive: true, force: true });
});

function cli(...args: string[]): string {
  const p = Bun.spawnSync([exe, ...args, ...common()], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } });
  if (p.exitCode !== 0) throw new Error(`keyturn ${args.join(" ")}: ${p.stderr.toString()}`);
  return p.stdout.toString();
}

const refusal = (p: Promise<unknown>) => p.then(() => null).catch((e) => e as KeyturnClientError);

test("a trial started twice is one trial; a key bought with a meter converts it and spends until usage_limit", async () => {
  const client = new KeyturnClient({ variant: "alpha", issuer: ISSUER, baseUrl: url, licenseKeys: { [kid]: spkiOf(join(dir, "keys", `${kid}.pub.pem`)) } });
  const device: Device = { hash: await deviceHash("alpha", "kit-models-device"), name: "Kit PC", platform: "win-x64", version: "1.0.0", product: "alpha" };

  const trial = await client.startTrial(device);
  expect(trial.entitlement).toMatchObject({ kind: "license", plan: "eval", planTitle: "Pro (trial)" });
  expect((await client.startTrial(device)).verified.claims.lic).toBe(trial.verified.claims.lic);

  const created = JSON.parse(
    cli("license", "create", "--licensee", "Ada", "--plan", "pro", "--seats", "1", "--channels", "stable", "--meter", "exports=3/30d", "--json"),
  ) as { key: string; id: string };
  const bought = await client.activate(created.key, device);
  expect((await refusal(client.current(trial.token)))?.code).toBe("entitlement_revoked");
  expect((await refusal(client.startTrial(device)))?.code).toBe("license_expired");

  expect((await client.use(bought.token, { meter: "exports", amount: 2, idempotencyKey: "e2e-1" })).remaining).toBe(1);
  expect((await client.use(bought.token, { meter: "exports", amount: 2, idempotencyKey: "e2e-1" })).remaining).toBe(1);
  const over = await refusal(client.use(bought.token, { meter: "exports", amount: 2 }));
  expect(over?.code).toBe("usage_limit");
  expect(over?.status).toBe(403);

  const shown = JSON.parse(cli("license", "show", created.id, "--json")) as { meters: Record<string, { used: number; remaining: number }> };
  expect(shown.meters.exports).toMatchObject({ used: 2, remaining: 1 });
  const stats = JSON.parse(cli("stats", "--releases", join(dir, "releases"), "--json")) as { trials: { started: number; converted: number } };
  expect(stats.trials).toEqual({ started: 1, converted: 1 });
}, 60_000);
