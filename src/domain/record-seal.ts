import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Store } from "../store/types";
import { KeyturnError } from "./errors";

/** The key file, beside the signing keys: backed up with them, copied with them to every process. */
export const RECORDS_KEY_FILE = "records.key";
const PREFIX = "sealed1:";
const CHECK_TEXT = "keyturn records key";

/**
 * Records that hold a secret the site must read back (a webhook endpoint's signing secret, an
 * Idempotency-Key's first answer with its licence key), sealed with AES-256-GCM: a copy of the
 * records (a backup, a database dump) does not give them away without `<keys>/records.key`.
 * Each value is bound to its row (the context is the GCM additional data), so sealed values cannot
 * be swapped between rows. Values written before sealing (no prefix) are read as they are.
 *
 * The key is made on first need (32 random bytes, mode 0600). Processes sharing the records must
 * share the file: the first seal writes a check value into the records, and a process whose key
 * does not open it refuses to seal or open anything, naming the file to copy.
 */
export class RecordSeal {
  private key: Promise<CryptoKey> | null = null;

  constructor(
    private readonly keysDir: string,
    private readonly store: Store,
  ) {}

  async seal(text: string, context: string): Promise<string> {
    const key = await this.ready();
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: encode(context) }, key, encode(text));
    return `${PREFIX}${Buffer.from(iv).toString("base64url")}.${Buffer.from(sealed).toString("base64url")}`;
  }

  async open(value: string, context: string): Promise<string> {
    if (!value.startsWith(PREFIX)) return value;
    return openWith(await this.ready(), value, context).catch(() => {
      throw new KeyturnError("internal_error", `a sealed record does not open with ${this.path()}`);
    });
  }

  private path(): string {
    return join(this.keysDir, RECORDS_KEY_FILE);
  }

  private ready(): Promise<CryptoKey> {
    this.key ??= this.load().catch((e: unknown) => {
      this.key = null;
      throw e;
    });
    return this.key;
  }

  private async load(): Promise<CryptoKey> {
    const key = await crypto.subtle.importKey("raw", readOrCreate(this.path()), "AES-GCM", false, ["encrypt", "decrypt"]);
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const candidate = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: encode("check") }, key, encode(CHECK_TEXT));
    const stored = await this.store.recordKeyCheck(`${PREFIX}${Buffer.from(iv).toString("base64url")}.${Buffer.from(candidate).toString("base64url")}`);
    const opened = await openWith(key, stored, "check").catch(() => null);
    if (opened !== CHECK_TEXT)
      throw new KeyturnError(
        "unavailable",
        `${this.path()} is not the key these records were sealed with: copy records.key from the keys directory of the process that first served them`,
      );
    return key;
  }
}

const encode = (text: string) => new TextEncoder().encode(text);

async function openWith(key: CryptoKey, value: string, context: string): Promise<string> {
  const [iv = "", sealed = ""] = value.slice(PREFIX.length).split(".");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: Buffer.from(iv, "base64url"), additionalData: encode(context) },
    key,
    Buffer.from(sealed, "base64url"),
  );
  return new TextDecoder().decode(plain);
}

/** The 32-byte key of the file, made (exclusively, mode 0600) when there is none. */
function readOrCreate(path: string): Uint8Array<ArrayBuffer> {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    writeFileSync(path, Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw new KeyturnError("unavailable", `cannot create ${path}: ${(e as Error).message}`);
  }
  const bytes = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
  if (bytes.length !== 32) throw new KeyturnError("unavailable", `${path} does not hold a 32-byte key (base64)`);
  return new Uint8Array(bytes);
}
