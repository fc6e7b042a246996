import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { VARIANTS, type VariantName } from "../../src/config/variants";
import { generateKeyFiles, loadKeyRing } from "../../src/domain/keys";
import { TokenSigner } from "../../src/domain/tokens";
import { deviceHash, tempDir } from "../helpers";
import { ReleaseTree } from "../release-tree";

export const MIRROR_TOKEN = `kta_${"m".repeat(40)}`;
const isoOf = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "+00:00");

type Mode = "ok" | "slow" | "garbage" | "backwards" | "unauthorized" | "malformed-event";

/**
 * A vendor's feed as EVENTS-CONTRACT.md describes it, served by a real Bun.serve on 127.0.0.1: the
 * producer does not exist on this branch. It can also go down (the port closes), answer slowly,
 * answer garbage, send a cursor from the past, or refuse the token.
 */
export class FeedServer {
  private server: ReturnType<typeof Bun.serve> | null = null;
  private readonly events: { id: string; seq: string; type: string; timestamp: string; data: unknown }[] = [];
  mode: Mode = "ok";
  /** The records' identity (docs/admin-api.md): set another to play records copied or restored. */
  epoch = "e0";
  /** Events up to this seq were pruned by retention: a cursor before it is answered a snapshot. */
  prunedThrough = 0;
  /** Every request's `after` and `snapshot` (null when absent) and whether it carried the right token. */
  readonly requests: { after: string | null; snapshot: string | null; authorized: boolean }[] = [];
  port = 0;
  /** What the vendor's GET /api/v1/meta answers (its public keys), when set. */
  meta: unknown = null;
  /** The `site` of every feed answer (the vendor's lanes and license keys), when set; a feed from before it sends none. */
  site: unknown = null;

  start(): this {
    this.server = Bun.serve({ hostname: "127.0.0.1", port: this.port, fetch: (r) => this.answer(r) });
    this.port = this.server.port!;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  down(): void {
    this.server?.stop(true);
    this.server = null;
  }

  up(): void {
    if (!this.server) this.start();
  }

  add(type: string, data: unknown, timeMs = Date.now()): string {
    const seq = String(this.events.length + 1);
    this.events.push({ id: `evt_${seq.padStart(6, "0")}`, seq, type, timestamp: isoOf(timeMs), data });
    return seq;
  }

  deactivate(activation: string, tokensValidUntilMs: number): string {
    return this.add("activation.deactivated", { activation: { id: activation }, tokensValidUntil: isoOf(tokensValidUntilMs) });
  }

  revoke(license: string, tokensValidUntilMs: number): string {
    return this.add("license.revoked", { license: { id: license }, tokensValidUntil: isoOf(tokensValidUntilMs) });
  }

  private async answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/api/v1/meta" && this.meta) return Response.json(this.meta);
    if (url.pathname !== "/api/v1/admin/feed") return Response.json({ ok: false, error: "not_found", message: "refused" }, { status: 404 });
    const authorized = request.headers.get("authorization") === `Bearer ${MIRROR_TOKEN}`;
    const afterText = url.searchParams.get("after");
    const snapshotText = url.searchParams.get("snapshot");
    this.requests.push({ after: afterText, snapshot: snapshotText, authorized });
    if (this.mode === "unauthorized" || !authorized) return Response.json({ ok: false, error: "admin_token_invalid", message: "refused" }, { status: 401 });
    if (this.mode === "slow") await Bun.sleep(1500);
    if (this.mode === "garbage") return new Response("<html>\u001b[31mproxy error</html>", { headers: { "content-type": "text/html" } });
    const m = afterText === null ? null : /^(?:([0-9a-z]+)\.)?(\d+)$/.exec(afterText);
    if (afterText !== null && !m) return Response.json({ ok: false, error: "invalid_request", message: "refused" }, { status: 400 });
    const limit = Math.min(Number(url.searchParams.get("limit") ?? "500"), 1000);
    const epoch = this.epoch;
    if (snapshotText !== null || !m || m[1] !== epoch || Number(m[2]) > this.events.length || Number(m[2]) < this.prunedThrough)
      return Response.json(this.snapshot(snapshotText === null ? 0 : Number(snapshotText), limit));
    const after = Number(m[2]);
    if (this.mode === "backwards") {
      // A feed whose history restarts below what the mirror saw, under the same epoch.
      return Response.json({ ok: true, mode: "events", epoch, events: [], cursor: `${epoch}.${Math.max(0, after - 1)}` });
    }
    const page = this.events.filter((e) => Number(e.seq) > after).slice(0, limit);
    if (this.mode === "malformed-event" && page.length > 0)
      return Response.json({ ok: true, mode: "events", epoch, events: [{ ...page[0], data: { activation: { id: 42 } } }], cursor: `${epoch}.${page[0]!.seq}` });
    return Response.json({
      ok: true,
      mode: "events",
      epoch,
      events: page,
      cursor: `${epoch}.${page.at(-1)?.seq ?? after}`,
      ...(this.site ? { site: this.site } : {}),
    });
  }

  /** The state the events leave, as the feed's snapshot (docs/admin-api.md), `limit` items a page from `offset`. */
  private snapshot(offset: number, limit: number) {
    const revocations = new Map<string, { kind: "activation" | "license"; id: string; tokensValidUntil: string }>();
    const expiries = new Map<string, { license: string; expires: string }>();
    type Control = { lane: string; version: string; halted: string | null; haltedMs: number; withdrawn: string | null; rule?: string };
    const releases = new Map<string, Control>();
    for (const e of this.events) {
      const d = e.data as any;
      if (e.type === "activation.deactivated")
        revocations.set(`a${d.activation.id}`, { kind: "activation", id: d.activation.id, tokensValidUntil: d.tokensValidUntil });
      else if (e.type === "license.revoked") revocations.set(`l${d.license.id}`, { kind: "license", id: d.license.id, tokensValidUntil: d.tokensValidUntil });
      else if (e.type === "license.reinstated") revocations.delete(`l${d.license.id}`);
      else if (e.type === "license.updated" && d.license.expires) expiries.set(d.license.id, { license: d.license.id, expires: d.license.expires });
      else if (e.type.startsWith("release.")) {
        const key = `${d.release.lane}\n${d.release.version}`;
        const r: Control = releases.get(key) ?? { lane: d.release.lane, version: d.release.version, halted: null, haltedMs: 0, withdrawn: null };
        if (e.type === "release.halted" && !r.halted) (r.halted = e.timestamp), d.rule && (r.rule = d.rule);
        if (e.type === "release.resumed" && r.halted) (r.haltedMs += Date.parse(e.timestamp) - Date.parse(r.halted)), (r.halted = null), delete r.rule;
        if (e.type === "release.withdrawn") r.withdrawn = e.timestamp;
        if (e.type === "release.restored") r.withdrawn = null;
        releases.set(key, r);
      }
    }
    const items = [
      ...[...revocations.values()].map((v) => ["r", v] as const),
      ...[...expiries.values()].map((v) => ["e", v] as const),
      ...[...releases.values()].map((v) => ["c", v] as const),
    ];
    const page = items.slice(offset, offset + limit);
    return {
      ok: true,
      mode: "snapshot",
      epoch: this.epoch,
      reason: offset === 0 ? "start" : "continued",
      revocations: page.filter(([k]) => k === "r").map(([, v]) => v),
      expiries: page.filter(([k]) => k === "e").map(([, v]) => v),
      releases: page.filter(([k]) => k === "c").map(([, v]) => v),
      next: offset + limit < items.length ? String(offset + limit) : null,
      cursor: `${this.epoch}.${this.events.length}`,
      ...(this.site ? { site: this.site } : {}),
    };
  }

  stop(): void {
    this.down();
  }
}

/**
 * The vendor's side of a mirror test: a license key pair (the mirror gets the public half only),
 * a release tree signed with a release key, and tokens signed as the vendor's site would.
 */
export class Vendor {
  readonly dir = tempDir("keyturn-vendor-");
  readonly vendorKeys = join(this.dir, "vendor-keys");
  /** What the mirror is given: license and release public keys only. */
  readonly mirrorKeys: string;
  readonly tree: ReleaseTree;
  private ring!: Awaited<ReturnType<typeof loadKeyRing>>;

  constructor(
    readonly variant: VariantName,
    readonly url: string,
  ) {
    this.tree = new ReleaseTree(variant);
    this.mirrorKeys = this.tree.keysDir;
    const kid = VARIANTS[variant].defaultLicenseKid;
    generateKeyFiles(this.vendorKeys, kid);
    mkdirSync(this.mirrorKeys, { recursive: true });
    copyFileSync(join(this.vendorKeys, `${kid}.pub.pem`), join(this.mirrorKeys, `${kid}.pub.pem`));
  }

  async init(): Promise<this> {
    this.ring = await loadKeyRing(this.vendorKeys, VARIANTS[this.variant]);
    return this;
  }

  /** The vendor's GET /meta: its variant and public keys (license and release). */
  async meta(): Promise<unknown> {
    const release = await loadKeyRing(this.mirrorKeys, VARIANTS[this.variant]);
    const keys = [...this.ring.verify.values(), ...[...release.verify.values()].filter((k) => k.purpose === "release")];
    return { ok: true, service: "keyturn", variant: this.variant, keys: keys.map(({ kid, purpose, spki }) => ({ kid, purpose, spki })) };
  }

  /** A token as the vendor issues it (exp `ttlMs` from `nowMs`); `iss` when the vendor answers at another address. */
  token(o: {
    activation: string;
    license: string;
    channels?: string[];
    nowMs?: number;
    ttlMs?: number;
    iss?: string;
    /** A licence's terms: the end of its maintenance window (seconds) and its features. */
    upd?: number;
    ent?: Record<string, string | true>;
  }): string {
    const now = o.nowMs ?? Date.now();
    return new TokenSigner(VARIANTS[this.variant], o.iss ?? this.url, this.ring.signing!).sign(
      {
        sub: o.activation,
        kind: "license",
        lic: o.license,
        name: "Ada Lovelace",
        org: "Analytical Engines Ltd",
        plan: "pro",
        chn: o.channels ?? ["stable"],
        dev: deviceHash(this.variant),
        ...(o.upd !== undefined ? { upd: o.upd } : {}),
        ...(o.ent !== undefined ? { ent: o.ent } : {}),
      },
      now,
      now + (o.ttlMs ?? 7 * 86_400_000),
    ).token;
  }

  remove(): void {
    this.tree.remove();
  }
}

/** Another site's signer of the same variant (its own key and iss), or another variant's. */
export async function foreignSigner(variant: VariantName, iss: string, sharedKeysDir?: string): Promise<TokenSigner> {
  const dir = sharedKeysDir ?? join(tempDir("keyturn-foreign-"), "keys");
  if (!sharedKeysDir) generateKeyFiles(dir, VARIANTS[variant].defaultLicenseKid);
  const ring = await loadKeyRing(dir, VARIANTS[variant]);
  return new TokenSigner(VARIANTS[variant], iss, ring.signing!);
}
