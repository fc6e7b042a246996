import { chmodSync, constants, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { SealedChange, SealedValue, Store } from "../store/types";
import { KeyturnError } from "./errors";
import { looseMode } from "./keys";
import { mailBodyContext } from "./mail/outbox";
import { webhookSecretContext } from "./webhooks/signing";

/** The key file, beside the signing keys: backed up with them, copied with them to every process. */
export const RECORDS_KEY_FILE = "records.key";
const PREFIX = "sealed1:";
const CHECK_TEXT = "keyturn records key";
const CHECK_CONTEXT = "check";
/** A rotation writes the new key here first; it becomes records.key once the records are re-sealed. */
const NEXT_SUFFIX = ".new";
/** Tries of a rotation that finds the sealed values changed under it (one sealed or removed meanwhile). */
const ROTATION_TRIES = 3;

/** What an Idempotency-Key's first answer is sealed with: bound to its admin token (scope) and key. */
export const idempotencyAnswerContext = (scope: string, key: string) => `idempotency\n${scope}\n${key}`;

function contextOf(value: SealedValue): string {
  if (value.kind === "mail-body") return mailBodyContext(value.mailId);
  return value.kind === "webhook-secret" ? webhookSecretContext(value.endpointId) : idempotencyAnswerContext(value.scope, value.key);
}

interface LoadedKey {
  readonly key: CryptoKey;
  /** The records' check value the key opened. */
  readonly check: string;
}

/**
 * Records that hold a secret the site must read back (a webhook endpoint's signing secret, an
 * Idempotency-Key's first answer with its licence key), sealed with AES-256-GCM: a copy of the
 * records (a backup, a database dump) does not give them away without `<keys>/records.key`.
 * Each value is bound to its row (the context is the GCM additional data), so sealed values cannot
 * be swapped between rows. Values written before sealing (no prefix) are read as they are.
 *
 * The key is made on first need (32 random bytes, mode 0600). Processes sharing the records must
 * share the file: the first seal writes a check value into the records, and a process whose key
 * does not open it refuses to seal or open anything, naming the file to copy. A missing file while
 * sealed values exist is refused the same way, never replaced by a new key (which would open
 * none of them). `rotate` re-seals every value with a new key; the check value tells other
 * processes, which read the file again before they seal or when a value does not open.
 */
export class RecordSeal {
  private loaded: Promise<LoadedKey> | null = null;

  constructor(
    private readonly keysDir: string,
    private readonly store: Store,
  ) {}

  async seal(text: string, context: string): Promise<string> {
    let loaded = await this.ready();
    // A rotation by another process changes the check value: the key to seal with is the new one.
    if ((await this.store.readRecordKeyCheck()) !== loaded.check) loaded = await this.reload();
    return sealWith(loaded.key, text, context);
  }

  async open(value: string, context: string): Promise<string> {
    if (!value.startsWith(PREFIX)) return value;
    const first = await this.ready();
    const opened = await openWith(first.key, value, context).catch(() => null);
    if (opened !== null) return opened;
    // Sealed since with a rotated key? Read the file again, once.
    const again = await this.reload();
    return openWith(again.key, value, context).catch(() => {
      throw new KeyturnError("internal_error", `a sealed record does not open with ${this.path()}`);
    });
  }

  /**
   * At start, before anything is served: refuses records sealed with a key that is missing or not
   * the file at hand (unavailable, saying what to restore); answers warnings (a file others can
   * read, as for the signing keys). Makes nothing: a key is made on first need.
   */
  async verify(): Promise<string[]> {
    const path = this.path();
    const stored = await this.store.readRecordKeyCheck();
    const bytes = readKey(path);
    if (bytes === null) {
      if (stored !== null) await this.refuseMissing();
      return [];
    }
    if (stored !== null) await this.opening(await importKey(bytes), stored);
    const loose = looseMode(statSync(path).mode);
    return loose ? [`key file ${path} ${loose}`] : [];
  }

  /**
   * Makes a new key and re-seals every sealed value with it, in one transaction with the new check
   * value; then the old file is kept beside it as `records.key.replaced-<UTC time>` and the new key
   * becomes records.key. Other processes must be given the new file (they refuse to seal or open
   * until they have it, never sealing with the old key).
   */
  async rotate(now: number): Promise<{ readonly resealed: number; readonly backup: string | null }> {
    const path = this.path();
    const stored = await this.store.readRecordKeyCheck();
    // A lost key with nothing left sealed by it: the new key replaces it without opening anything.
    const lost = stored !== null && readKey(path) === null && (await this.store.listSealed(PREFIX, 1)).length === 0;
    const current = lost ? { key: null, check: stored } : await this.reload();
    const nextPath = path + NEXT_SUFFIX;
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const next = await importKey(bytes);
    // A leftover of a rotation that stopped before its commit: the records do not use it (the current key opened them).
    rmSync(nextPath, { force: true });
    writeKeyFile(nextPath, bytes);
    // The copy is made before the commit: once the records are re-sealed, only a rename is left to do.
    const backup = lost ? null : `${path}.replaced-${new Date(now).toISOString().replace(/[-:]|\.\d+/g, "")}`;
    let copied = false;
    let committed = false;
    try {
      if (backup) {
        copyFileSync(path, backup, constants.COPYFILE_EXCL);
        copied = true;
        chmodSync(backup, 0o600);
      }
      for (let attempt = 1; attempt <= ROTATION_TRIES; attempt++) {
        const changes: SealedChange[] = [];
        for (const value of current.key ? await this.store.listSealed(PREFIX) : []) {
          const text = await openWith(current.key!, value.value, contextOf(value)).catch(() => {
            throw new KeyturnError("internal_error", `a sealed record (${describe(value)}) does not open with ${path}; nothing was changed`);
          });
          changes.push({ ...value, after: await sealWith(next, text, contextOf(value)) });
        }
        const check = await sealWith(next, CHECK_TEXT, CHECK_CONTEXT);
        if (!(await this.store.replaceSealed(PREFIX, changes, { before: current.check, after: check }))) continue;
        committed = true;
        renameSync(nextPath, path);
        this.loaded = Promise.resolve({ key: next, check });
        return { resealed: changes.length, backup };
      }
    } finally {
      if (!committed) {
        rmSync(nextPath, { force: true });
        if (copied) rmSync(backup!, { force: true });
      }
    }
    throw new KeyturnError(
      "unavailable",
      "the sealed records kept changing during the rotation (webhook endpoints or licences being added); nothing was changed: try again",
    );
  }

  private path(): string {
    return join(this.keysDir, RECORDS_KEY_FILE);
  }

  private ready(): Promise<LoadedKey> {
    this.loaded ??= this.load().catch((e: unknown) => {
      this.loaded = null;
      throw e;
    });
    return this.loaded;
  }

  private reload(): Promise<LoadedKey> {
    this.loaded = null;
    return this.ready();
  }

  private async load(): Promise<LoadedKey> {
    const path = this.path();
    const stored = await this.store.readRecordKeyCheck();
    const bytes = readKey(path);
    if (bytes !== null) {
      const key = await importKey(bytes);
      const check = stored ?? (await this.store.recordKeyCheck(await sealWith(key, CHECK_TEXT, CHECK_CONTEXT)));
      return { key, check: await this.opening(key, check) };
    }
    if (stored !== null) return this.refuseMissing();
    // The first need: a new key and its check value.
    const made = crypto.getRandomValues(new Uint8Array(32));
    const key = await importKey(made);
    if (!writeKeyFile(path, made)) return this.load(); // another process made it first
    return { key, check: await this.opening(key, await this.store.recordKeyCheck(await sealWith(key, CHECK_TEXT, CHECK_CONTEXT))) };
  }

  /** The check value, when `key` opens it; else unavailable, naming the file to copy. */
  private async opening(key: CryptoKey, check: string): Promise<string> {
    if ((await openWith(key, check, CHECK_CONTEXT).catch(() => null)) === CHECK_TEXT) return check;
    const path = this.path();
    const next = existsSync(path + NEXT_SUFFIX)
      ? ` (a rotation that stopped after re-sealing left the new key in ${path}${NEXT_SUFFIX}: if it is, move it to ${path})`
      : "";
    throw new KeyturnError(
      "unavailable",
      `${path} is not the key these records were sealed with: copy records.key from the keys directory of the process that first served them${next}`,
    );
  }

  /**
   * Refuses a missing key file once the records have a check value: a new key would open none of
   * the values sealed with the lost one. With none left, the way on is a rotation, which makes a
   * new key without the old one.
   */
  private async refuseMissing(): Promise<never> {
    const sealed = await this.store.listSealed(PREFIX, 1);
    const path = this.path();
    if (sealed.length === 0)
      throw new KeyturnError(
        "unavailable",
        `${path} is missing, and these records were sealed with one: restore records.key from the backup of the keys directory ` +
          "(no value sealed with it remains, so `keyturn keys rotate-records-key` may make a new one instead)",
      );
    throw new KeyturnError(
      "unavailable",
      `${path} is missing, and the records hold values sealed with it (${sealed.map(describe).join(", ")}): ` +
        "restore records.key from the backup of the keys directory, or copy it from another process serving these records; a new key would open none of them",
    );
  }
}

const encode = (text: string) => new TextEncoder().encode(text);

function describe(value: SealedValue): string {
  if (value.kind === "mail-body") return "mails in the outbox";
  return value.kind === "webhook-secret" ? `webhook endpoint ${value.endpointId}'s secret` : "Idempotency-Key answers";
}

function importKey(bytes: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", bytes, "AES-GCM", false, ["encrypt", "decrypt"]);
}

async function sealWith(key: CryptoKey, text: string, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: encode(context) }, key, encode(text));
  return `${PREFIX}${Buffer.from(iv).toString("base64url")}.${Buffer.from(sealed).toString("base64url")}`;
}

async function openWith(key: CryptoKey, value: string, context: string): Promise<string> {
  const [iv = "", sealed = ""] = value.slice(PREFIX.length).split(".");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: Buffer.from(iv, "base64url"), additionalData: encode(context) },
    key,
    Buffer.from(sealed, "base64url"),
  );
  return new TextDecoder().decode(plain);
}

/** The 32-byte key of the file; null when there is no file. */
function readKey(path: string): Uint8Array<ArrayBuffer> | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new KeyturnError("unavailable", `cannot read ${path}: ${(e as Error).message}`);
  }
  const bytes = Buffer.from(text.trim(), "base64");
  if (bytes.length !== 32) throw new KeyturnError("unavailable", `${path} does not hold a 32-byte key (base64)`);
  return new Uint8Array(bytes);
}

/** Writes the key (base64, mode 0600) exclusively; false when the file exists already. */
function writeKeyFile(path: string, bytes: Uint8Array): boolean {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, Buffer.from(bytes).toString("base64") + "\n", { mode: 0o600, flag: "wx" });
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw new KeyturnError("unavailable", `cannot create ${path}: ${(e as Error).message}`);
  }
}
