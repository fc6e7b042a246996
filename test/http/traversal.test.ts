import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { createApp } from "../../src/http/app";
import { releaseSite, type WrittenRelease } from "../release-tree";

/**
 * The traversal corpus: plain, percent-encoded, double-encoded, backslashes, absolute
 * paths, NUL, overlong names and overlong UTF-8. None may yield any byte of a file that is not a
 * live release's installer, manifest or signature — keys live next door.
 */
const SECRET = "SECRET-MARKER-7f3a";

function corpus(r: WrittenRelease, root: string, outside: string): string[] {
  const abs = outside.replace(/^\//, "");
  return [
    "../../../../secret.txt",
    "..%2f..%2f..%2f..%2fsecret.txt",
    "%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.txt",
    "%2E%2E/%2E%2E/%2E%2E/%2E%2E/secret.txt",
    "%252e%252e%252f%252e%252e%252fsecret.txt",
    "..%255c..%255csecret.txt",
    "..%5c..%5c..%5c..%5csecret.txt",
    "..\\..\\..\\..\\secret.txt",
    `%2f${abs.replaceAll("/", "%2f")}`,
    `/${abs}`,
    `%5c${abs.replaceAll("/", "%5c")}`,
    `${encodeURIComponent(join(root, "..", "keys", "alpha-license-2026-10.pem"))}`,
    "..%2f..%2f..%2f..%2fkeys%2falpha-license-2026-10.pem",
    `${r.installer}%00.json`,
    `${r.installer}%00`,
    "%00",
    `%c0%ae%c0%ae%c0%af%c0%ae%c0%ae%c0%afsecret.txt`,
    `%e0%80%ae%e0%80%ae/secret.txt`,
    "a".repeat(5000),
    `${"..%2f".repeat(200)}secret.txt`,
    `1.0.0%2f${r.installer}`,
    `..%2f1.0.0%2f${r.installer}`,
    "notes.txt",
    ".hidden",
    `.${r.installer}.AbC123`,
    `alpha-update.json.sig%2f..`,
    `alpha-update.json%2f..%2f..%2f..%2f..%2fsecret.txt`,
    ".",
    "..",
    "%2e",
    "%2e%2e",
    "~",
    `${r.installer}/`,
    `${r.installer}%2f`,
    `${r.installer}%20`,
    `${r.installer.toUpperCase()}`,
  ];
}

describe("no URL path reaches a file outside the release tree", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let token: string;
  let r: WrittenRelease;
  let outside: string;
  let port: number;
  let server: ReturnType<typeof createApp>;

  beforeAll(async () => {
    s = await releaseSite("alpha");
    r = s.tree.add({ version: "1.0.0" });
    outside = join(s.tree.dir, "secret.txt");
    writeFileSync(outside, SECRET);
    writeFileSync(join(r.dir, "notes.txt"), SECRET);
    writeFileSync(join(r.dir, ".hidden"), SECRET);
    writeFileSync(join(r.dir, `.${r.installer}.AbC123`), SECRET);
    await s.holder.rescan();
    token = await s.token();
    server = createApp(s.site.composed.services);
    server.listen({ hostname: "127.0.0.1", port: 0 });
    port = server.server!.port!;
  });
  afterAll(async () => {
    await server.stop(true);
    await s.close();
  });

  test("through app.handle: every corpus entry is 404 and carries no byte of another file", async () => {
    for (const name of corpus(r, s.tree.root, outside)) {
      const res = await s.site.request("GET", `/updates/${r.lane}/${name}`, { token });
      const body = await res.text();
      expect({ name, status: res.status }).toEqual({ name, status: 404 });
      expect(body).not.toContain(SECRET);
      expect(body).not.toContain("PRIVATE KEY");
      expect(res.headers.get("content-type")).toStartWith("application/json");
    }
  });

  test("over a raw socket (no URL normalisation by a client): every corpus entry is refused", async () => {
    for (const name of corpus(r, s.tree.root, outside)) {
      const { status, text } = await rawGet(port, `/api/v1/updates/${r.lane}/${name}`, token);
      expect({ name, refused: status >= 400 && status < 500 }).toEqual({ name, refused: true });
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain("PRIVATE KEY");
    }
  });

  test("the installer itself is served by the same server (the corpus is refused for its path, not for everything)", async () => {
    const { status, text } = await rawGet(port, `/api/v1/updates/${r.lane}/${r.installer}`, token);
    expect(status).toBe(200);
    expect(text.length).toBeGreaterThan(r.installerBytes.length);
  });
});

function rawGet(port: number, path: string, token: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("connect", () => socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`));
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
    });
  });
}
