/**
 * `bun bench/mirror-update-path.ts`: requests per second of a manifest GET through app.handle on the
 * vendor's site (bearer check from the records) and on a mirror (bearer check from the feed's
 * knowledge, here with 10,000 revocations known), in the same run, alternating rounds.
 */
import { createLogger } from "../src/config/log";
import { testSite, createLicense, device } from "../test/helpers";
import { FeedServer, Vendor } from "../test/mirror/vendor";
import { mirrorSite } from "../test/mirror/mirror-site";

const N = 10_000;
const ROUNDS = 9;
const quiet = createLogger("json", "error", () => {});
const feed = new FeedServer().start();
const vendor = await new Vendor("alpha", feed.url).init();
const release = vendor.tree.add({ version: "1.0.0" });
const path = `/updates/${release.lane}/alpha-update.json`;

// The vendor: its own license key (private) beside the release public key, the same tree.
const site = await testSite("alpha", { withKey: true, log: quiet, settings: { releases: vendor.tree.root } });
await site.composed.services.releases.ready();
const { key } = await createLicense(site, { channels: ["stable"] });
const vendorToken = ((await (await site.request("POST", "/licenses/activate", { body: { key, device: device("alpha") } })).json()) as { token: string }).token;

const mirror = await mirrorSite(vendor, feed.url, { log: quiet });
for (let i = 0; i < 10_000; i++) feed.deactivate(`act_gone${i}`, Date.now() + 86_400_000);
while ((await mirror.follower.pollOnce()).ok) {
  const s = await mirror.get("/health");
  if (((await s.json()) as { mirror: { cursor: string } }).mirror.cursor === "10000") break;
}
const mirrorToken = vendor.token({ activation: "act_bench", license: "lic_bench", nowMs: mirror.clock() });

async function rate(handle: (r: Request) => Promise<Response>, token: string, url: string): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    const res = await handle(new Request(url, { headers: { authorization: `Bearer ${token}` } }));
    if (res.status !== 200) throw new Error(`status ${res.status}`);
    await res.arrayBuffer();
    if (i % 100 === 0) await Bun.sleep(0);
  }
  return N / ((performance.now() - started) / 1000);
}
const vendorHandle = (r: Request) => site.app.handle(r);
const mirrorHandle = (r: Request) => mirror.app.handle(r);
await rate(vendorHandle, vendorToken, `http://localhost/api/v1${path}`);
await rate(mirrorHandle, mirrorToken, `http://localhost/api/v1${path}`);
const results: { vendor: number; mirror: number }[] = [];
const url = `http://localhost/api/v1${path}`;
for (let r = 0; r < ROUNDS; r++) {
  // Alternate which goes first: the machine is shared, and its load drifts.
  const first = r % 2 === 0 ? "vendor" : "mirror";
  const a = Math.round(await (first === "vendor" ? rate(vendorHandle, vendorToken, url) : rate(mirrorHandle, mirrorToken, url)));
  const b = Math.round(await (first === "vendor" ? rate(mirrorHandle, mirrorToken, url) : rate(vendorHandle, vendorToken, url)));
  results.push(first === "vendor" ? { vendor: a, mirror: b } : { vendor: b, mirror: a });
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const ratios = results.map((r) => r.mirror / r.vendor);
console.log(
  JSON.stringify({
    requestsPerRound: N,
    revocationsKnownByMirror: 10_000,
    medianVendor: median(results.map((r) => r.vendor)),
    medianMirror: median(results.map((r) => r.mirror)),
    medianMirrorOverVendor: Math.round(median(ratios) * 100) / 100,
    rounds: results,
  }),
);
await mirror.close();
await site.close();
feed.stop();
vendor.remove();
