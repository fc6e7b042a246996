import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createApp } from "../../src/http/app";
import { releaseSite, type WrittenRelease } from "../release-tree";

/** The same answers through Bun.serve's socket: the runtime must not re-apply or drop our range handling. */
describe("installer over a real socket", () => {
  let s: Awaited<ReturnType<typeof releaseSite>>;
  let r: WrittenRelease;
  let token: string;
  let server: ReturnType<typeof createApp>;
  let url: string;

  beforeAll(async () => {
    s = await releaseSite("beta");
    r = s.tree.add({ version: "3.0.0", installerBytes: new Uint8Array(200_000).map((_, i) => (i * 31) % 251) });
    await s.holder.rescan();
    token = await s.token();
    server = createApp(s.site.composed.services);
    server.listen({ hostname: "127.0.0.1", port: 0 });
    url = `http://127.0.0.1:${server.server!.port}/api/v1/updates/${r.lane}/${r.installer}`;
  });
  afterAll(async () => {
    await server.stop(true);
    await s.close();
  });
  const fetchIt = (headers: Record<string, string> = {}, method = "GET") => fetch(url, { method, headers: { authorization: `Bearer ${token}`, ...headers } });

  test("whole file, then a resumed download with Range + If-Range, concatenate to the file", async () => {
    const full = Buffer.from(r.installerBytes);
    const whole = await fetchIt();
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-disposition")).toBe(`attachment; filename="${r.installer}"`);
    expect(whole.headers.get("content-length")).toBe(String(full.length));
    const etag = whole.headers.get("etag")!;
    expect(Buffer.from(await whole.arrayBuffer()).equals(full)).toBe(true);

    const half = await fetchIt({ range: "bytes=0-99999" });
    expect(half.status).toBe(206);
    const part = Buffer.from(await half.arrayBuffer());
    expect(part.length).toBe(100_000);
    const rest = await fetchIt({ range: "bytes=100000-", "if-range": etag });
    expect(rest.status).toBe(206);
    expect(rest.headers.get("content-range")).toBe(`bytes 100000-199999/${full.length}`);
    expect(Buffer.concat([part, Buffer.from(await rest.arrayBuffer())]).equals(full)).toBe(true);
  });

  test("suffix range, 416, several ranges and If-Range mismatch, as the socket carries them", async () => {
    const suffix = await fetchIt({ range: "bytes=-10" });
    expect(suffix.status).toBe(206);
    expect(Buffer.from(await suffix.arrayBuffer()).equals(Buffer.from(r.installerBytes).subarray(-10))).toBe(true);
    const beyond = await fetchIt({ range: "bytes=200000-" });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get("content-range")).toBe("bytes */200000");
    const several = await fetchIt({ range: "bytes=0-0,5-5" });
    expect(several.status).toBe(200);
    expect((await several.arrayBuffer()).byteLength).toBe(200_000);
    const stale = await fetchIt({ range: "bytes=0-9", "if-range": '"old"' });
    expect(stale.status).toBe(200);
    expect((await stale.arrayBuffer()).byteLength).toBe(200_000);
  });

  test("HEAD: Content-Length of the file, no body", async () => {
    const head = await fetchIt({}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe("200000");
    expect(head.headers.get("accept-ranges")).toBe("bytes");
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });
});
