import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { ServeProcess } from "../serve-process";
import { deviceHash, tempDir } from "../helpers";
import { FeedServer, foreignSigner, MIRROR_TOKEN, startMirror, Vendor } from "./vendor";
import type { WrittenRelease } from "../release-tree";

const POLL_MS = 300;
const DAY = 86_400_000;
const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");

async function errorOf(res: Response): Promise<string | null> {
  return res.status === 200 || res.status === 206 ? null : ((await res.json()) as { error: string }).error;
}

describe("keyturn serve --mirror-of, as a real process", () => {
  const feed = new FeedServer();
  let vendor: Vendor;
  let release: WrittenRelease;
  let mirror: ServeProcess;
  const dir = tempDir("keyturn-mirror-proc-");
  const lane = () => `${mirror.url}/api/v1/updates/${release.lane}`;
  const get = (url: string, token: string, headers: Record<string, string> = {}) => fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } });

  beforeAll(async () => {
    feed.start();
    vendor = await new Vendor("alpha", feed.url).init();
    release = vendor.tree.add({ version: "2.0.0", installerBytes: new Uint8Array(200_000).map((_, i) => i % 251) });
    mirror = await startMirror(vendor, feed, dir, [], POLL_MS);
  });
  afterAll(async () => {
    await mirror.cleanup();
    feed.stop();
    vendor.remove();
  });

  test("a vendor token reads manifest, .sig, installer (resumed with Range) and releases; the token never reaches the log", async () => {
    const token = vendor.token({ activation: "act_reader", license: "lic_reader" });
    const manifest = await get(`${lane()}/alpha-update.json`, token);
    expect(manifest.status).toBe(200);
    expect(Buffer.from(await manifest.arrayBuffer()).equals(release.manifestBytes)).toBe(true);
    const sig = await get(`${lane()}/alpha-update.json.sig`, token);
    expect(sig.status).toBe(200);
    expect((await sig.text()).split(".").length).toBe(3);

    const first = await get(`${lane()}/${release.installer}`, token, { range: "bytes=0-99999" });
    expect(first.status).toBe(206);
    const etag = first.headers.get("etag")!;
    const head = new Uint8Array(await first.arrayBuffer());
    const rest = await get(`${lane()}/${release.installer}`, token, { range: "bytes=100000-", "if-range": etag });
    expect(rest.status).toBe(206);
    const whole = Buffer.concat([head, new Uint8Array(await rest.arrayBuffer())]);
    expect(whole.equals(Buffer.from(release.installerBytes))).toBe(true);

    const releases = (await (await get(`${mirror.url}/api/v1/releases`, token)).json()) as { releases: { version: string }[] };
    expect(releases.releases.map((r) => r.version)).toEqual(["2.0.0"]);
    // A token without the channel sees nothing of it, as at the vendor.
    const beta = vendor.token({ activation: "act_beta", license: "lic_beta", channels: ["beta"] });
    expect(await errorOf(await get(`${lane()}/alpha-update.json`, beta))).toBe("channel_not_allowed");

    expect(mirror.lines.join("\n")).not.toContain(MIRROR_TOKEN);
    const meta = (await (await fetch(`${mirror.url}/api/v1/meta`)).json()) as { mirror: { of: string } };
    expect(meta.mirror.of).toBe(feed.url);
  });

  test("tokens of another site (other iss, other key) or of another variant are refused", async () => {
    const dev = deviceHash("alpha");
    const claims = { sub: "act_x", kind: "license" as const, lic: "lic_x", name: "n", org: "o", plan: "p", chn: ["stable"], dev };
    const otherSite = (await foreignSigner("alpha", "https://other.example")).sign(claims, Date.now(), Date.now() + DAY).token;
    const sameKeyOtherIss = (await foreignSigner("alpha", "https://mirror.example.com", vendor.vendorKeys)).sign(claims, Date.now(), Date.now() + DAY).token;
    const beta = (await foreignSigner("beta", feed.url)).sign({ ...claims, dev: deviceHash("beta") }, Date.now(), Date.now() + DAY).token;
    for (const t of [otherSite, sameKeyOtherIss, beta]) {
      const res = await get(`${lane()}/alpha-update.json`, t);
      expect(res.status).toBe(401);
      expect(await errorOf(res)).toBe("entitlement_invalid");
    }
  });

  test("a deactivation in the feed is refused within one poll interval, others still served; a revoked license refuses all its tokens; both survive a restart with the vendor down", async () => {
    const doomed = vendor.token({ activation: "act_doomed", license: "lic_shared" });
    const sibling = vendor.token({ activation: "act_sibling", license: "lic_shared" });
    const other = vendor.token({ activation: "act_other", license: "lic_other" });
    const manifest = () => `${lane()}/alpha-update.json`;
    for (const t of [doomed, sibling, other]) expect((await get(manifest(), t)).status).toBe(200);

    // Counted in polls, not milliseconds (a busy runner stretches any bound): the first poll after
    // the deactivation fetches it, and by the next one (asking past its seq) the mirror refuses.
    const before = feed.requests.length;
    const seq = Number(feed.deactivate("act_doomed", Date.now() + 7 * DAY));
    const cursorOf = (after: string | null) => Number(after?.split(".").pop() ?? 0);
    while (!feed.requests.slice(before).some((r) => cursorOf(r.after) >= seq)) await Bun.sleep(20);
    expect(await errorOf(await get(manifest(), doomed))).toBe("entitlement_revoked");
    expect(feed.requests.slice(before).findIndex((r) => cursorOf(r.after) >= seq)).toBe(1);
    expect((await get(manifest(), sibling)).status).toBe(200);
    expect((await get(manifest(), other)).status).toBe(200);

    feed.revoke("lic_shared", Date.now() + 7 * DAY);
    while ((await get(manifest(), sibling)).status === 200) await Bun.sleep(20);
    expect(await errorOf(await get(manifest(), sibling))).toBe("license_revoked");
    const freshOfRevoked = vendor.token({ activation: "act_new", license: "lic_shared" });
    expect(await errorOf(await get(manifest(), freshOfRevoked))).toBe("license_revoked");
    expect((await get(manifest(), other)).status).toBe(200);

    const health = (await (await fetch(`${mirror.url}/api/v1/health`)).json()) as {
      mirror: { of: string; cursor: string; lastSync: string; staleSeconds: number };
    };
    expect(health.mirror).toMatchObject({ of: feed.url, cursor: "e0.2", problem: null });

    // Restart with the vendor away: what was learnt comes from the mirror's own records.
    feed.down();
    mirror.proc.kill("SIGTERM");
    expect(await mirror.proc.exited).toBe(0);
    mirror = await startMirror(vendor, feed, dir, [], POLL_MS);
    await mirror.waitFor("mirror feed refused: keeping what is known");
    expect(await errorOf(await get(manifest(), doomed))).toBe("entitlement_revoked");
    expect(await errorOf(await get(manifest(), sibling))).toBe("license_revoked");
    expect((await get(manifest(), other)).status).toBe(200);
    const after = (await (await fetch(`${mirror.url}/api/v1/health`)).json()) as { mirror: { cursor: string; lastSync: string } };
    expect(after.mirror.cursor).toBe("e0.2");
    expect(after.mirror.lastSync).toBe(health.mirror.lastSync);
    feed.up();
  });

  test("a mirror with a private key in --keys refuses to start (exit 2, saying why)", () => {
    const run = Bun.spawnSync(
      [
        process.execPath,
        MAIN,
        "serve",
        "--variant",
        "alpha",
        "--base-url",
        "https://mirror.example.com",
        "--data",
        join(dir, "refused"),
        "--keys",
        vendor.vendorKeys,
        "--releases",
        vendor.tree.root,
        "--mirror-of",
        feed.url,
        "--port",
        "0",
      ],
      { env: { ...process.env, KEYTURN_MIRROR_TOKEN: MIRROR_TOKEN }, stderr: "pipe", stdout: "pipe" },
    );
    expect(run.exitCode).toBe(2);
    const err = run.stderr.toString();
    expect(err).toContain("--keys: a mirror holds no private key");
    expect(err).toContain("alpha-license-2026-10.pem");
    expect(err).not.toContain(MIRROR_TOKEN);
  });
});
