import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { resolveSetting, type Environment } from "../config/settings";
import { escapeControl } from "../config/text";
import { VARIANT_NAMES, VARIANTS, type Variant, type VariantName } from "../config/variants";
import { checkFeedFiles } from "../domain/releases/feed-files";
import { hashFile, readRegularFile } from "../domain/releases/files";
import { parseManifest } from "../domain/releases/manifest";
import { ReleaseProblem } from "../domain/releases/problem";
import { laneName } from "../domain/releases/release-controls";
import { checkInstallerHash, checkInstallerSize } from "../domain/releases/scan";
import { UPLOAD_LIMITS } from "../domain/releases/upload-model";
import { err, out, parseFlags, UsageError } from "./io";
import { siteVariant } from "./release";

export const USAGE = [
  "       keyturn release push --site URL [--token-file FILE] [--halted] [--chunk-size BYTES] [--retries N] [--variant V]",
  "            [--channels C,...] [--platforms P,...] FOLDER   (sends a signed release folder; the admin token, scope releases:write,",
  "            from KEYTURN_ADMIN_TOKEN or --token-file)",
].join("\n");

const OPTIONS = {
  site: { type: "string" },
  "token-file": { type: "string" },
  halted: { type: "boolean" },
  "chunk-size": { type: "string" },
  retries: { type: "string" },
  variant: { type: "string" },
  channels: { type: "string" },
  platforms: { type: "string" },
} as const;

/** A refusal the site answered: printed with its code and message, exit 1. */
class Refused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly offset: number | null,
  ) {
    super(message);
  }
}

/** The connection failed or the site was briefly unable (429, 5xx): worth another attempt. */
class Transient extends Error {
  constructor(
    message: string,
    readonly waitMs: number,
  ) {
    super(message);
  }
}

interface LocalFile {
  readonly name: string;
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
}

interface UploadState {
  readonly id: string;
  readonly files: readonly { readonly name: string; readonly size: number; readonly received: number }[];
}

/**
 * `keyturn release push`: sends a signed release folder to a site through the admin upload API.
 * The folder is checked here first as `release sign` checks it; each file goes in chunks from the
 * byte the site holds, so a push started again after a cut connection sends only the rest.
 */
export async function pushCommand(args: string[], env: Environment): Promise<number> {
  const parsed = parseFlags(USAGE, { args, options: OPTIONS, allowPositionals: true, strict: true });
  const v = parsed.values;
  if (parsed.positionals.length !== 1) throw new UsageError(USAGE, "release push needs one FOLDER");
  if (!v.site) throw new UsageError(USAGE, "release push needs --site URL (the site's --base-url)");
  const api = apiOf(v.site);
  const token = tokenOf(v["token-file"], env);
  const chunk = wholeNumber("--chunk-size", v["chunk-size"], 1, UPLOAD_LIMITS.chunkBytes) ?? UPLOAD_LIMITS.chunkBytes;
  const retries = wholeNumber("--retries", v.retries, 0, 100) ?? 5;
  const dir = resolve(parsed.positionals[0]!);

  let files: LocalFile[];
  let lane: string;
  try {
    const variant = siteVariant(variantOf(dir, resolveSetting("variant", { given: v.variant, env })), v, env);
    ({ files, lane } = readFolder(dir, variant));
  } catch (e) {
    if (!(e instanceof ReleaseProblem)) throw e;
    err(`keyturn: not pushed: ${parsed.positionals[0]}: ${e.message}`);
    return 1;
  }

  const site = new SiteClient(api, token);
  const total = files.reduce((n, f) => n + f.size, 0);
  let sent = 0;
  try {
    let attempt = 0;
    for (;;) {
      try {
        const upload = await site.json<{ upload: UploadState; resumed?: boolean }>("POST", "/admin/uploads", {
          lane,
          folder: basename(dir),
          files: files.map((f) => ({ name: f.name, size: f.size, sha256: f.sha256 })),
          ...(v.halted ? { halted: true } : {}),
        });
        const held = upload.upload.files.reduce((n, f) => n + f.received, 0);
        if (upload.resumed && held > 0) out(`resuming upload ${upload.upload.id}: the site holds ${held} of ${total} bytes`);
        for (const f of files) {
          let at = upload.upload.files.find((x) => x.name === f.name)?.received ?? 0;
          while (at < f.size) {
            const end = Math.min(f.size, at + chunk) - 1;
            try {
              const answer = await site.put(upload.upload.id, f, at, end);
              sent += end - at + 1;
              at = answer.file.received;
            } catch (e) {
              // The site holds another length (an earlier attempt's bytes arrived after all): go on from there.
              if (e instanceof Refused && e.code === "upload_conflict" && e.offset !== null) at = e.offset;
              else throw e;
            }
          }
        }
        const published = await site.json<{ release: { lane: string; version: string; folder: string }; halted: boolean; live: boolean }>(
          "POST",
          `/admin/uploads/${upload.upload.id}/publish`,
        );
        const r = published.release;
        out(`published ${r.lane} ${r.version} (folder ${r.folder})${published.live ? "" : "; the site is verifying its installer"}`);
        if (published.halted) out(`halted at 0 %: start its ramp with keyturn release resume --lane ${r.lane} --version ${r.version} (or the console)`);
        out(`sent ${sent} bytes; the release is ${total} bytes`);
        return 0;
      } catch (e) {
        if (!(e instanceof Transient) || attempt >= retries) throw e;
        attempt++;
        err(`keyturn: ${e.message}; trying again (${attempt} of ${retries})`);
        await Bun.sleep(e.waitMs || Math.min(30_000, 1000 * 2 ** (attempt - 1)));
      }
    }
  } catch (e) {
    if (e instanceof Refused) {
      err(`keyturn: not pushed: ${e.code}: ${e.message}`);
      out(`sent ${sent} bytes; the release is ${total} bytes`);
      return 1;
    }
    if (e instanceof Transient) {
      err(`keyturn: not pushed: ${e.message}; push again to send the rest`);
      out(`sent ${sent} bytes; the release is ${total} bytes`);
      return 1;
    }
    throw e;
  }
}

/** The site's API root from --site: https, or http on a loopback address (a test, or a tunnel). */
function apiOf(site: string): string {
  let url: URL;
  try {
    url = new URL(site);
  } catch {
    throw new UsageError(USAGE, "--site must be a URL such as https://licenses.example.com");
  }
  const loopback = ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback))
    throw new UsageError(USAGE, "--site must be https (http only on a loopback address)");
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}/api/v1`;
}

function tokenOf(file: string | undefined, env: Environment): string {
  let token = env.KEYTURN_ADMIN_TOKEN;
  if (file !== undefined) {
    try {
      token = readFileSync(file, "utf8").trim();
    } catch (e) {
      throw new UsageError(USAGE, `--token-file ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? e})`);
    }
  }
  if (!token) throw new UsageError(USAGE, "release push needs an admin token with scope releases:write in KEYTURN_ADMIN_TOKEN or --token-file");
  if (!/^kta_[A-Za-z0-9_-]{32,200}$/.test(token)) throw new UsageError(USAGE, "the admin token must look like kta_… (keyturn admin-token create)");
  return token;
}

function wholeNumber(flag: string, text: string | undefined, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const n = /^\d{1,12}$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(USAGE, `${flag} must be a whole number from ${min} to ${max}`);
  return n;
}

/** The variant named, or the one whose manifest the folder holds. */
function variantOf(dir: string, name: string | undefined): Variant {
  if (name !== undefined) {
    if (!Object.hasOwn(VARIANTS, name)) throw new UsageError(USAGE, "--variant must be alpha, beta or gamma");
    return VARIANTS[name as VariantName];
  }
  const found = VARIANT_NAMES.map((n) => VARIANTS[n]).filter((variant) => lstatSync(join(dir, variant.manifestFile), { throwIfNoEntry: false }));
  if (found.length !== 1)
    throw new ReleaseProblem("no manifest (alpha-update.json, beta-update.json or gamma-update.json) in the folder, or several; give --variant");
  return found[0]!;
}

/** The folder's files, checked as `release sign` checks them, and its lane and version. */
function readFolder(dir: string, variant: Variant): { files: LocalFile[]; lane: string } {
  const manifestPath = join(dir, variant.manifestFile);
  const bytes = readRegularFile(manifestPath, variant.manifestFile, 64 * 1024);
  let said: Record<string, unknown>;
  try {
    said = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new ReleaseProblem(`${variant.manifestFile} is not valid JSON`);
  }
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  const place = { product: variant.products.length > 0 ? text(said.product) : null, channel: text(said.channel), platform: text(said.platform) };
  const manifest = parseManifest(bytes, variant, place);
  checkInstallerSize(join(dir, manifest.installer), manifest);
  checkInstallerHash(join(dir, manifest.installer), manifest);
  checkFeedFiles(dir, manifest.feeds, manifest.installer);
  readRegularFile(`${manifestPath}.sig`, `${variant.manifestFile}.sig`, 64 * 1024);
  const names = readdirSync(dir).filter((n) => !n.startsWith("."));
  if (names.length > UPLOAD_LIMITS.files) throw new ReleaseProblem(`the folder has ${names.length} files; a release has at most ${UPLOAD_LIMITS.files}`);
  const files = names.sort().map((name) => {
    const path = join(dir, name);
    const stats = lstatSync(path);
    if (!stats.isFile()) throw new ReleaseProblem(`${name} is not a regular file`);
    return { name, path, size: stats.size, sha256: hashFile(path) };
  });
  return { files, lane: laneName(manifest.product, manifest.channel, manifest.platform) };
}

/** The admin upload API over fetch, its refusals as Refused and its passing failures as Transient. */
class SiteClient {
  constructor(
    private readonly api: string,
    private readonly token: string,
  ) {}

  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    return this.answer<T>(() => fetch(this.api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
  }

  put(id: string, f: LocalFile, start: number, end: number): Promise<{ file: { received: number } }> {
    return this.answer(() =>
      fetch(`${this.api}/admin/uploads/${id}/files/${encodeURIComponent(f.name)}`, {
        method: "PUT",
        headers: {
          authorization: `Bearer ${this.token}`,
          "content-type": "application/octet-stream",
          "content-range": `bytes ${start}-${end}/${f.size}`,
        },
        body: Bun.file(f.path).slice(start, end + 1),
      }),
    );
  }

  private async answer<T>(send: () => Promise<Response>): Promise<T> {
    let res: Response;
    let text: string;
    try {
      res = await send();
      text = await res.text();
    } catch (e) {
      throw new Transient(`the connection to the site failed (${escapeControl(String((e as Error)?.message ?? e)).slice(0, 200)})`, 0);
    }
    let body: { ok?: boolean; error?: string; message?: string } = {};
    try {
      body = JSON.parse(text);
    } catch {
      // Not JSON: a proxy's page. Its status says enough.
    }
    if (res.ok && body.ok === true) return body as T;
    const wait = Number(res.headers.get("retry-after") ?? "0");
    // A proxy's 502–504 (no keyturn error body) passes, as does what the site says to retry (429, a file
    // still being written by a request cut off); keyturn's own 503 says what is missing, and stays.
    if (res.status === 429 || res.headers.has("retry-after") || ([502, 503, 504].includes(res.status) && body.error === undefined))
      throw new Transient(`the site answered ${res.status}${body.message ? ` (${body.message})` : ""}`, Number.isFinite(wait) ? wait * 1000 : 0);
    const offset = res.headers.get("upload-offset");
    throw new Refused(res.status, body.error ?? String(res.status), body.message ?? `the site answered ${res.status}`, offset === null ? null : Number(offset));
  }
}
