import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS } from "../../src/config/variants";
import { CLI_CALLER, type Scope } from "../../src/domain/admin/deps";
import { createAdminToken } from "../../src/domain/admin/tokens";
import { makeManifest } from "../../src/domain/releases/manifest-make";
import { signManifest } from "../../src/domain/releases/signature";
import { UPLOAD_LIMITS } from "../../src/domain/releases/upload-model";
import { DISK_MARGIN, ReleaseUploads } from "../../src/domain/releases/uploads";
import type { PublicKeyInfo } from "../../src/domain/keys";
import { BASE, tempDir } from "../helpers";
import { releaseSite } from "../release-tree";

// docs/releasing-from-ci.md: create an upload, PUT each file in chunks at the byte the site holds,
// publish; the site checks the folder as `release check` does and renames it into the tree.

let site: Awaited<ReturnType<typeof releaseSite>>;
let token: string;
const variant = VARIANTS.gamma;
const LANE = "stable/win-x64";

beforeAll(async () => {
  site = await releaseSite("gamma");
  // A release already in the tree: the first scan's releases are the baseline, announced by none.
  site.tree.add({ version: "1.0.0" });
  await site.holder.rescan();
  token = await mint(["releases:write"]);
});
afterAll(() => site.close());

async function mint(scopes: Scope[]): Promise<string> {
  return (await createAdminToken(site.site.composed.services.admin, CLI_CALLER, { name: `ci-${scopes.join("-")}`, scopes })).secret;
}

const staging = () => join(site.site.dir, "data", "uploads");
const stagedUploads = () => (existsSync(staging()) ? readdirSync(staging()) : []);

interface Folder {
  readonly name: string;
  readonly files: Record<string, Buffer>;
  readonly installer: string;
}

/** A release folder as `release make` writes it and the CI holds it, signed with the tree's release key. */
function releaseFolder(version: string, o: { rollout?: string; tamper?: boolean; otherKey?: boolean; channel?: string } = {}): Folder {
  const dir = join(tempDir("keyturn-upload-"), version);
  mkdirSync(dir);
  const installer = `gamma-${version}-win-x64.exe`;
  const bytes = randomBytes(300_000);
  writeFileSync(join(dir, installer), bytes);
  const { bytes: manifest } = makeManifest(
    {
      product: null,
      channel: o.channel ?? "stable",
      platform: "win-x64",
      version,
      released: site.site.clock() - 60_000,
      installer: { name: installer, path: join(dir, installer) },
      ...(o.rollout ? { rollout: o.rollout } : {}),
    },
    variant,
  );
  const sig = o.otherKey ? otherSignature(manifest) : signManifest(manifest, { kid: site.tree.kid, privateKey: site.tree.privateKey }, variant);
  if (o.tamper) bytes[1000] = bytes[1000]! ^ 0xff;
  return { name: version, installer, files: { [installer]: bytes, [variant.manifestFile]: manifest, [`${variant.manifestFile}.sig`]: Buffer.from(sig) } };
}

function otherSignature(manifest: Buffer): string {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return signManifest(manifest, { kid: site.tree.kid, privateKey }, variant);
}

const sha256 = (b: Uint8Array) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
const listing = (f: Folder) => Object.entries(f.files).map(([name, b]) => ({ name, size: b.length, sha256: sha256(b) }));

async function call(method: string, path: string, o: { body?: unknown; token?: string; raw?: Uint8Array; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${o.token ?? token}`, ...o.headers };
  let body: Uint8Array | string | undefined;
  if (o.raw) {
    body = o.raw;
    headers["content-type"] = "application/octet-stream";
  } else if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers["content-type"] = "application/json";
  }
  const res = await site.site.app.handle(new Request(BASE + path, { method, headers, body }));
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const create = (f: Folder, extra: Record<string, unknown> = {}) =>
  call("POST", "/admin/uploads", { body: { lane: LANE, folder: f.name, files: listing(f), ...extra } });

function put(id: string, name: string, bytes: Uint8Array, start: number, total: number) {
  return call("PUT", `/admin/uploads/${id}/files/${name}`, { raw: bytes, headers: { "content-range": `bytes ${start}-${start + bytes.length - 1}/${total}` } });
}

async function sendAll(id: string, f: Folder) {
  for (const [name, bytes] of Object.entries(f.files)) expect((await put(id, name, bytes, 0, bytes.length)).status).toBe(200);
}

describe("release uploads", () => {
  test("a folder sent in chunks, resumed at the byte the site holds, is published into the tree whole", async () => {
    const f = releaseFolder("1.1.0");
    const first = await create(f);
    expect(first.status).toBe(200);
    expect(first.body.resumed).toBe(false);
    const id: string = first.body.upload.id;
    expect(first.body.upload.files.every((x: { received: number }) => x.received === 0)).toBe(true);
    const installer = f.files[f.installer]!;

    // Half the installer, then the connection "drops": a new create with the same files resumes.
    expect((await put(id, f.installer, installer.subarray(0, 100_000), 0, installer.length)).body.file).toEqual({
      name: f.installer,
      size: installer.length,
      received: 100_000,
    });
    // Started again with --halted and then without: the bytes stay, the latest choice holds.
    const halted = await create(f, { halted: true });
    expect(halted.body).toMatchObject({ resumed: true, upload: { id, halted: true } });
    const again = await create(f);
    expect(again.body.resumed).toBe(true);
    expect(again.body.upload.halted).toBe(false);
    expect(again.body.upload.id).toBe(id);
    expect(again.body.upload.files.find((x: { name: string }) => x.name === f.installer).received).toBe(100_000);

    // Bytes sent from elsewhere than the site holds are refused with where to go on from.
    const wrong = await put(id, f.installer, installer.subarray(50_000, 60_000), 50_000, installer.length);
    expect(wrong.status).toBe(409);
    expect(wrong.body.error).toBe("upload_conflict");
    expect(wrong.headers.get("upload-offset")).toBe("100000");

    // Nothing is in the tree before publishing, and publishing an incomplete upload is refused.
    expect(existsSync(join(site.tree.root, LANE, "1.1.0"))).toBe(false);
    const early = await call("POST", `/admin/uploads/${id}/publish`);
    expect(early.status).toBe(409);
    expect(early.body.message).toContain(`${f.installer} has 100000 of its 300000 bytes`);

    expect((await put(id, f.installer, installer.subarray(100_000), 100_000, installer.length)).body.file.received).toBe(300_000);
    for (const name of [variant.manifestFile, `${variant.manifestFile}.sig`]) {
      const b = f.files[name]!;
      expect((await put(id, name, b, 0, b.length)).status).toBe(200);
    }
    const published = await call("POST", `/admin/uploads/${id}/publish`);
    expect(published.status).toBe(200);
    expect(published.body.release).toEqual({ lane: LANE, version: "1.1.0", folder: "1.1.0" });
    expect(published.body.halted).toBe(false);
    // Readable as published files are, whatever the staging area's modes (a mirror's rsync reads them as another user).
    const folder = join(site.tree.root, LANE, "1.1.0");
    expect(statSync(folder).mode & 0o777).toBe(0o755);
    expect(readdirSync(folder).map((name) => statSync(join(folder, name)).mode & 0o777)).toEqual([0o644, 0o644, 0o644]);

    // In the tree, byte for byte; the staging area is empty; the site serves it once verified.
    for (const [name, b] of Object.entries(f.files)) expect(readFileSync(join(site.tree.root, LANE, "1.1.0", name)).equals(b)).toBe(true);
    expect(stagedUploads()).toEqual([]);
    const index = await site.holder.verified();
    expect(index.releasesOf(null, "stable", "win-x64").map((r) => r.manifest.version)).toContain("1.1.0");

    // The audit trail names the token; release.published is written once the scan records it.
    const audit = await site.site.composed.store.listAudit({ limit: 50 } as never);
    const actions = audit.filter((a) => a.outcome === "ok" && (a.action === "release-upload" || a.action === "release-publish"));
    expect(actions.map((a) => a.action).sort()).toEqual(["release-publish", "release-upload"]);
    expect(actions.every((a) => a.actor?.includes("(ci-releases:write)"))).toBe(true);
    expect(actions.find((a) => a.action === "release-publish")!.ref).toBe(published.body.ref);
    let events: { type: string; data: unknown }[] = [];
    for (let i = 0; i < 100 && events.length === 0; i++) {
      events = (await site.site.composed.store.listEvents({ after: 0, limit: 100, types: ["release.published"] })) as never;
      if (events.length === 0) await Bun.sleep(20);
    }
    expect(events.map((e) => JSON.parse(String(e.data)))).toEqual([{ release: { lane: LANE, version: "1.1.0" } }]);

    // The same folder again: it is in the tree, never rewritten.
    const twice = await create(f);
    expect(twice.status).toBe(409);
    expect(twice.body.error).toBe("release_exists");
  });

  test("a tampered installer is refused with release check's message, and nothing is left anywhere", async () => {
    const f = releaseFolder("1.2.0", { tamper: true });
    const { body } = await create(f);
    await sendAll(body.upload.id, f);
    const refused = await call("POST", `/admin/uploads/${body.upload.id}/publish`);
    expect(refused.status).toBe(422);
    expect(refused.body.error).toBe("release_invalid");
    expect(refused.body.message).toBe(`Not published: installer ${f.installer} does not match the manifest's sha256.`);
    expect(existsSync(join(site.tree.root, LANE, "1.2.0"))).toBe(false);
    expect(readdirSync(join(site.tree.root, LANE)).filter((n) => n.startsWith("."))).toEqual([]);
    expect(stagedUploads()).toEqual([]);
    expect((await call("GET", `/admin/uploads/${body.upload.id}`)).status).toBe(404);
  });

  test("a manifest signed with a key the site does not hold is refused, naming the signature", async () => {
    const f = releaseFolder("1.3.0", { otherKey: true });
    const { body } = await create(f);
    await sendAll(body.upload.id, f);
    const refused = await call("POST", `/admin/uploads/${body.upload.id}/publish`);
    expect(refused.status).toBe(422);
    expect(refused.body.message).toContain("signature does not verify with gamma-release-2026-11");
    expect(existsSync(join(site.tree.root, LANE, "1.3.0"))).toBe(false);
    expect(stagedUploads()).toEqual([]);
  });

  test("a file that does not match the sha256 it was listed with is discarded at its last byte", async () => {
    const f = releaseFolder("1.4.0");
    const { body } = await create(f);
    const installer = Buffer.from(f.files[f.installer]!);
    installer[0] = installer[0]! ^ 1;
    const last = await put(body.upload.id, f.installer, installer, 0, installer.length);
    expect(last.status).toBe(422);
    expect(last.body.message).toBe(`${f.installer} does not match the sha256 given for it; the site discarded it: send it again.`);
    expect((await call("GET", `/admin/uploads/${body.upload.id}`)).body.upload.files.find((x: { name: string }) => x.name === f.installer).received).toBe(0);
    expect((await call("DELETE", `/admin/uploads/${body.upload.id}`)).status).toBe(200);
    expect(stagedUploads()).toEqual([]);
  });

  test("names, lanes and ids that would reach outside are refused before anything is written", async () => {
    const f = releaseFolder("1.5.0");
    const files = listing(f);
    for (const body of [
      { lane: LANE, folder: "..", files },
      { lane: LANE, folder: ".hidden", files },
      { lane: LANE, folder: "a/b", files },
      { lane: "../../etc", folder: "1.5.0", files },
      { lane: LANE, folder: "1.5.0", files: [...files, { name: "../escape", size: 1, sha256: "0".repeat(64) }] },
      { lane: LANE, folder: "1.5.0", files: [...files, { name: "a..b", size: 1, sha256: "0".repeat(64) }] },
      { lane: LANE, folder: "1.5.0", files: files.filter((x) => x.name !== `${variant.manifestFile}.sig`) },
    ]) {
      const r = await call("POST", "/admin/uploads", { body });
      expect({ body: body.folder + body.lane, status: r.status, error: r.body.error }).toEqual({
        body: body.folder + body.lane,
        status: 400,
        error: "invalid_request",
      });
    }
    expect(stagedUploads()).toEqual([]);
    const { body } = await create(f);
    const id = body.upload.id as string;
    expect((await put(id, "other.exe", Buffer.from("x"), 0, 1)).status).toBe(404);
    expect((await put(id, "..%2Fupload.json", Buffer.from("x"), 0, 1)).status).toBe(404);
    expect((await call("GET", "/admin/uploads/upl_..%2F..%2F")).status).toBe(404);
    // Past the declared size, or longer than its Content-Range says: refused.
    expect((await put(id, f.installer, Buffer.alloc(10), 299_995, 300_000)).status).toBe(400);
    const long = await call("PUT", `/admin/uploads/${id}/files/${f.installer}`, { raw: Buffer.alloc(20), headers: { "content-range": "bytes 0-9/300000" } });
    expect(long.status).toBe(400);
    expect((await call("GET", `/admin/uploads/${id}`)).body.upload.files.find((x: { name: string }) => x.name === f.installer).received).toBe(0);
    await call("DELETE", `/admin/uploads/${id}`);
  });

  test("a new upload of a folder whose pending upload is being written to is refused, not made to fail it", async () => {
    const f = releaseFolder("1.5.5");
    const { body } = await create(f);
    const bytes = f.files[f.installer]!;
    // A PUT whose body is still arriving holds the upload.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const stream = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(bytes.subarray(0, 100));
        await held;
        c.enqueue(bytes.subarray(100));
        c.close();
      },
    });
    const writing = site.site.app.handle(
      new Request(`${BASE}/admin/uploads/${body.upload.id}/files/${f.installer}`, {
        method: "PUT",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/octet-stream",
          "content-range": `bytes 0-${bytes.length - 1}/${bytes.length}`,
        },
        body: stream,
        duplex: "half",
      } as RequestInit),
    );
    // Until the site holds the first bytes, the PUT has begun.
    const received = async () =>
      (await call("GET", `/admin/uploads/${body.upload.id}`)).body.upload.files.find((x: { name: string }) => x.name === f.installer).received;
    try {
      for (let i = 0; i < 5000 && (await received()) === 0; i++) await Bun.sleep(1);
      expect(await received()).toBeGreaterThan(0);
      // A re-run whose build differs (other hashes): refused while the first is in use, and told to try again.
      const changed = Buffer.from(bytes);
      changed[0] = changed[0]! ^ 0xff;
      const other = { ...f, files: { ...f.files, [f.installer]: changed } };
      const again = await create(other);
      expect([again.status, again.body.error, again.headers.get("retry-after")]).toEqual([409, "upload_conflict", "1"]);
    } finally {
      release();
    }
    expect((await writing).status).toBe(200);
    await call("DELETE", `/admin/uploads/${body.upload.id}`);
  });

  test("the free space counts the bytes other pending uploads are still to receive: two pushes at once cannot together fill the disk", async () => {
    const deps = {
      variant,
      store: site.site.composed.store,
      clock: site.site.clock,
      stagingDir: join(tempDir("keyturn-staging-"), "uploads"),
      releasesRoot: site.tree.root,
      // Uploads need a release key to exist; starting one checks no signature.
      releaseKeys: () => new Map([[site.tree.kid, {} as PublicKeyInfo]]),
      index: () => site.holder.current,
      rescan: () => site.holder.rescan(),
      mirror: false,
    };
    // Room for one 300 KB release beyond the margin, not two.
    const small = new ReleaseUploads({ ...deps, freeBytes: () => DISK_MARGIN + 500_000 });
    const first = releaseFolder("1.5.6");
    await small.create({ lane: LANE, folder: first.name, files: listing(first) }, CLI_CALLER);
    const second = releaseFolder("1.5.7");
    let refused: unknown;
    await small.create({ lane: LANE, folder: second.name, files: listing(second) }, CLI_CALLER).catch((e: unknown) => (refused = e));
    expect((refused as { code?: string })?.code).toBe("payload_too_large");
    expect((refused as Error).message).toContain(`of them promised to the uploads pending (${LANE}/1.5.6)`);
    // With nothing else pending, the refusal says the free space alone.
    const bare = new ReleaseUploads({ ...deps, stagingDir: join(tempDir("keyturn-staging-"), "uploads"), freeBytes: () => 1000 });
    let alone: unknown;
    await bare.create({ lane: LANE, folder: second.name, files: listing(second) }, CLI_CALLER).catch((e: unknown) => (alone = e));
    expect((alone as Error).message).toMatch(/^The site has 1000 bytes free; this release needs \d+\.$/);
  });

  test("limits: a release's bytes, a chunk's bytes, files per release", async () => {
    const f = releaseFolder("1.6.0");
    const files = listing(f);
    const big = await call("POST", "/admin/uploads", {
      body: { lane: LANE, folder: "1.6.0", files: [...files, { name: "huge.bin", size: UPLOAD_LIMITS.releaseBytes, sha256: "0".repeat(64) }] },
    });
    expect(big.status).toBe(413);
    const many = Array.from({ length: UPLOAD_LIMITS.files + 1 }, (_, i) => ({ name: `f${i}`, size: 1, sha256: "0".repeat(64) }));
    expect((await call("POST", "/admin/uploads", { body: { lane: LANE, folder: "1.6.0", files: many } })).status).toBe(400);
    // A Sparkle release with six deltas (nine files, which release check accepts) is taken.
    const deltas = Array.from({ length: 6 }, (_, i) => ({ name: `Alpha-${i}.delta`, size: 1, sha256: "0".repeat(64) }));
    const nine = await call("POST", "/admin/uploads", { body: { lane: LANE, folder: "1.6.9", files: [...files, ...deltas] } });
    expect([nine.status, files.length + deltas.length]).toEqual([200, 9]);
    await call("DELETE", `/admin/uploads/${nine.body.upload.id}`);
    const { body } = await create(f);
    const chunk = await put(body.upload.id, f.installer, Buffer.alloc(UPLOAD_LIMITS.chunkBytes + 1), 0, 300_000);
    expect(chunk.status).toBe(400);
    expect(chunk.body.message).toContain("Content-Range must lie within");
    const bigFile = releaseFolder("1.6.1");
    const huge = Buffer.alloc(UPLOAD_LIMITS.chunkBytes + 1);
    const sized = await create(bigFile, {});
    await call("DELETE", `/admin/uploads/${sized.body.upload.id}`);
    const withHuge = await call("POST", "/admin/uploads", {
      body: {
        lane: LANE,
        folder: "1.6.1",
        files: [...listing(bigFile).filter((x) => x.name !== bigFile.installer), { name: bigFile.installer, size: huge.length, sha256: sha256(huge) }],
      },
    });
    const over = await put(withHuge.body.upload.id, bigFile.installer, huge, 0, huge.length);
    expect(over.status).toBe(413);
    expect(over.body.error).toBe("payload_too_large");
    await call("DELETE", `/admin/uploads/${withHuge.body.upload.id}`);
    await call("DELETE", `/admin/uploads/${body.upload.id}`);
  });

  test("a lane the site cannot write to: 503 before any audit line or halt is recorded, and the upload is kept to publish again", async () => {
    // The preview lane's directory cannot be made (a file where it would be), as under a read-only mount.
    writeFileSync(join(site.tree.root, "preview"), "not a directory");
    const publishLines = async () =>
      (await site.site.composed.store.listAudit({ limit: 200 })).filter((a) => a.action === "release-publish" && a.outcome === "ok").length;
    const before = await publishLines();
    try {
      const f = releaseFolder("1.9.0", { rollout: "7d", channel: "preview" });
      const { body } = await call("POST", "/admin/uploads", { body: { lane: "preview/win-x64", folder: f.name, files: listing(f), halted: true } });
      await sendAll(body.upload.id, f);
      const refused = await call("POST", `/admin/uploads/${body.upload.id}/publish`);
      expect([refused.status, refused.body.error]).toEqual([503, "unavailable"]);
      expect(refused.body.message).toContain("The release tree cannot be written to by the site (");
      expect((await site.site.composed.store.listReleaseControls()).find((c) => c.lane === "preview/win-x64")).toBeUndefined();
      expect(await publishLines()).toBe(before);
      rmSync(join(site.tree.root, "preview"));
      const published = await call("POST", `/admin/uploads/${body.upload.id}/publish`);
      expect([published.status, published.body.halted]).toEqual([200, true]);
    } finally {
      rmSync(join(site.tree.root, "preview"), { recursive: true, force: true });
    }
  });

  test("published under the service's umask (0077) into a lane not made yet: every folder it makes 0755, every file 0644, for a mirror's rsync", async () => {
    const before = process.umask(0o077);
    try {
      const f = releaseFolder("2.0.0", { channel: "preview" });
      const { body } = await call("POST", "/admin/uploads", { body: { lane: "preview/win-x64", folder: f.name, files: listing(f) } });
      await sendAll(body.upload.id, f);
      expect((await call("POST", `/admin/uploads/${body.upload.id}/publish`)).status).toBe(200);
      const modes = ["preview", "preview/win-x64", "preview/win-x64/2.0.0"].map((d) => statSync(join(site.tree.root, d)).mode & 0o777);
      expect(modes).toEqual([0o755, 0o755, 0o755]);
      const folder = join(site.tree.root, "preview/win-x64/2.0.0");
      expect(readdirSync(folder).map((name) => statSync(join(folder, name)).mode & 0o777)).toEqual([0o644, 0o644, 0o644]);
    } finally {
      process.umask(before);
      rmSync(join(site.tree.root, "preview"), { recursive: true, force: true });
      await site.holder.rescan();
    }
  });

  test("--halted publishes a ramp at 0 % for a person to resume; a fixed share cannot be held at 0 %", async () => {
    const fixed = releaseFolder("1.7.0");
    const a = await create(fixed, { halted: true });
    await sendAll(a.body.upload.id, fixed);
    const refused = await call("POST", `/admin/uploads/${a.body.upload.id}/publish`);
    expect(refused.status).toBe(422);
    expect(refused.body.message).toContain("its manifest needs a ramp, rollout { days }");
    expect(existsSync(join(site.tree.root, LANE, "1.7.0"))).toBe(false);

    const ramp = releaseFolder("1.8.0", { rollout: "7d" });
    const b = await create(ramp, { halted: true });
    await sendAll(b.body.upload.id, ramp);
    const published = await call("POST", `/admin/uploads/${b.body.upload.id}/publish`);
    expect(published.status).toBe(200);
    expect(published.body.halted).toBe(true);
    await site.holder.verified();
    const overview = await call("GET", "/admin/releases", { token: await mint(["releases:read"]) });
    const lane = overview.body.lanes.find((l: { lane: string }) => l.lane === LANE);
    const release = lane.releases.find((r: { version: string }) => r.version === "1.8.0");
    expect(release.share).toBe(0);
    expect(release.halted).not.toBeNull();
    // A person resumes it: the ramp starts from 0 % then, and stands at half after half its days.
    const resumed = await call("POST", `/admin/releases/${encodeURIComponent(LANE)}/1.8.0/resume`);
    expect(resumed.status).toBe(200);
    expect(resumed.body.share).toBe(0);
    site.site.clock.advance(3.5 * 86_400_000);
    const later = await call("GET", "/admin/releases", { token: await mint(["releases:read"]) });
    expect(later.body.lanes.find((l: { lane: string }) => l.lane === LANE).releases.find((r: { version: string }) => r.version === "1.8.0").share).toBeCloseTo(
      50,
      0,
    );
    site.site.clock.advance(-3.5 * 86_400_000);
    const halted = await site.site.composed.store.listEvents({ after: 0, limit: 100, types: ["release.halted"] });
    expect(halted.map((e) => JSON.parse(String(e.data))).filter((d) => d.release.lane === LANE)).toEqual([
      { release: { lane: LANE, version: "1.8.0" }, share: 0 },
    ]);
  });

  test("an upload not written to within a day is removed with its bytes", async () => {
    const f = releaseFolder("1.9.0");
    const { body } = await create(f);
    await put(body.upload.id, f.installer, f.files[f.installer]!.subarray(0, 1000), 0, 300_000);
    expect(stagedUploads()).toEqual([body.upload.id]);
    site.site.clock.advance(UPLOAD_LIMITS.expiryMs + 1000);
    expect((await call("GET", `/admin/uploads/${body.upload.id}`)).status).toBe(404);
    expect(stagedUploads()).toEqual([]);
  });

  test("the scope is releases:write", async () => {
    const f = releaseFolder("2.0.0");
    const r = await call("POST", "/admin/uploads", {
      token: await mint(["releases:read", "licenses:write"]),
      body: { lane: LANE, folder: "2.0.0", files: listing(f) },
    });
    expect(r.status).toBe(403);
    expect(r.body.error).toBe("insufficient_scope");
    expect(stagedUploads()).toEqual([]);
  });

  test("a data directory on another filesystem: the folder is copied beside its place under a hidden name, then renamed", async () => {
    const shm = "/dev/shm";
    if (!existsSync(shm) || statSync(shm).dev === statSync(site.tree.root).dev) {
      if (process.env.CI !== "true") return console.log("skipped: no /dev/shm on another filesystem than the release tree");
    }
    const data = mkdtempSync(join(shm, "keyturn-data-"));
    const other = await releaseSite("gamma", { data });
    try {
      expect(statSync(data).dev).not.toBe(statSync(other.tree.root).dev);
      const f = releaseFolder("5.0.0");
      // Signed with the first site's key: the other site holds its own; sign again for it.
      const manifest = f.files[variant.manifestFile]!;
      f.files[`${variant.manifestFile}.sig`] = Buffer.from(signManifest(manifest, { kid: other.tree.kid, privateKey: other.tree.privateKey }, variant));
      const otherToken = (await createAdminToken(other.site.composed.services.admin, CLI_CALLER, { name: "ci", scopes: ["releases:write"] })).secret;
      const send = (method: string, path: string, o: { body?: unknown; raw?: Uint8Array; headers?: Record<string, string> } = {}) =>
        other.site.app.handle(
          new Request(BASE + path, {
            method,
            headers: { authorization: `Bearer ${otherToken}`, "content-type": o.raw ? "application/octet-stream" : "application/json", ...o.headers },
            body: o.raw ?? (o.body === undefined ? undefined : JSON.stringify(o.body)),
          }),
        );
      const created = (await (await send("POST", "/admin/uploads", { body: { lane: LANE, folder: "5.0.0", files: listing(f) } })).json()) as {
        upload: { id: string };
      };
      for (const [name, b] of Object.entries(f.files))
        expect(
          (
            await send("PUT", `/admin/uploads/${created.upload.id}/files/${name}`, {
              raw: b,
              headers: { "content-range": `bytes 0-${b.length - 1}/${b.length}` },
            })
          ).status,
        ).toBe(200);
      const published = await send("POST", `/admin/uploads/${created.upload.id}/publish`);
      expect(published.status).toBe(200);
      for (const [name, b] of Object.entries(f.files)) expect(readFileSync(join(other.tree.root, LANE, "5.0.0", name)).equals(b)).toBe(true);
      expect(readdirSync(join(other.tree.root, LANE))).toEqual(["5.0.0"]);
      expect(readdirSync(join(data, "uploads"))).toEqual([]);
    } finally {
      await other.close();
      rmSync(data, { recursive: true, force: true });
    }
  });
});
