import { afterAll, afterEach, beforeEach, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { toConfig } from "../../../src/config/config";
import { silentLogger } from "../../../src/config/log";
import { VARIANTS } from "../../../src/config/variants";
import { CLI_CALLER, type AdminDeps } from "../../../src/domain/admin/deps";
import { createLicense } from "../../../src/domain/admin/licenses";
import { embeddedIPv4, isPublicAddress, NO_EXCEPTIONS, refusedAddresses } from "../../../src/domain/webhooks/destination";
import { addWebhookEndpoint, listDeliveries, showDelivery } from "../../../src/domain/webhooks/endpoints";
import { WebhookWorker } from "../../../src/domain/webhooks/worker";
import { tempDir, testClock, testSite, type TestSite } from "../../helpers";
import { startReceiver, type Receiver } from "../../webhook-receiver";

// Webhook URLs are chosen by whoever holds webhooks:write; what an attempt records (status, time,
// error) must not turn the site into a probe of its own network (issue 21, item 8).

const certDir = tempDir("keyturn-whtls-");
afterAll(() => rmSync(certDir, { recursive: true, force: true }));
/** A self-signed certificate for hooks.example only (a reserved name: no resolver knows it). */
function certificate() {
  const cert = join(certDir, "hooks.crt");
  const key = join(certDir, "hooks.key");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "2",
      "-subj",
      "/CN=hooks.example",
      "-addext",
      "subjectAltName=DNS:hooks.example",
    ],
    { stdio: "ignore" },
  );
  return { cert: readFileSync(cert, "utf8"), key: readFileSync(key, "utf8") };
}
const tls = certificate();

let site: TestSite;
let clock: ReturnType<typeof testClock>;
let receiver: Receiver;
let d: AdminDeps;
const licenseBody = { licensee: "Ada", organization: "AE", plan: "pro", planTitle: "Pro", seats: 1, channels: ["stable"] };
const code = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
  );

beforeEach(async () => {
  clock = testClock(Date.now());
  site = await testSite("alpha", { clock });
  d = { variant: VARIANTS.alpha, store: site.composed.store, clock, tokenTtlSeconds: 3600 };
  receiver = startReceiver();
});
afterEach(async () => {
  await receiver.stop();
  await site.close();
});

/** A real https receiver on loopback presenting the hooks.example certificate; records Host of each request. */
function tlsReceiver() {
  const hosts: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: tls.cert, key: tls.key },
    fetch(request) {
      hosts.push(request.headers.get("host") ?? "");
      return new Response(null, { status: 204 });
    },
  });
  return { port: server.port!, hosts, stop: () => server.stop(true) };
}

async function onlyAttempt() {
  const [delivery] = (await listDeliveries(d, CLI_CALLER, {})).deliveries;
  return { delivery, attempt: (await showDelivery(d, CLI_CALLER, delivery!.id)).attempts[0]! };
}

describe("webhook destinations", () => {
  test("creation refuses loopback, private, link-local, mapped, decimal/octal/hex IPs, internal names and plain http: invalid_request naming url", async () => {
    const refused = [
      "https://127.0.0.1/h",
      "https://127.1/h",
      "https://2130706433/h",
      "https://0x7f000001/h",
      "https://0177.0.0.1/h",
      "https://localhost/h",
      "https://LOCALHOST./h",
      "https://app.localhost/h",
      "https://[::1]/h",
      "https://[::ffff:127.0.0.1]/h",
      "https://[::ffff:7f00:1]/h",
      "https://0.0.0.0/h",
      "https://10.1.2.3/h",
      "https://172.16.0.9/h",
      "https://192.168.1.1/h",
      "https://169.254.169.254/latest/meta-data",
      "https://100.64.0.1/h",
      "https://[fd00::1]/h",
      "https://[fe80::1]/h",
      "https://[::]/h",
      "https://224.0.0.1/h",
      "https://intranet/h",
      "https://metadata.google.internal/h",
      "https://printer.local/h",
      "https://router.home.arpa/h",
      "https://db.lan/h",
      "http://hooks.example/h",
      "http://127.0.0.1:22/h",
      "http://[::1]:6379/h",
    ];
    for (const url of refused)
      expect([url, await code(addWebhookEndpoint(d, CLI_CALLER, { url, events: ["license.created"] }))]).toEqual([
        url,
        expect.stringMatching(/^invalid_request: url /),
      ]);
    for (const url of ["https://hooks.example/h", "https://8.8.8.8/h", "https://[2606:4700::1111]/h", "https://hooks.example:8443/h"])
      expect([url, await code(addWebhookEndpoint(d, CLI_CALLER, { url, events: ["license.created"] }))]).toEqual([url, "ok"]);
    // hosts the operator names are allowed, over http too
    const allowing = { ...d, webhookDestinations: { allowHosts: ["hooks.internal", "127.0.0.1"] } };
    for (const url of ["http://hooks.internal:8080/h", "https://HOOKS.internal./h", "http://127.0.0.1:9/h"])
      expect([url, await code(addWebhookEndpoint(allowing, CLI_CALLER, { url, events: ["license.created"] }))]).toEqual([url, "ok"]);
    expect(await code(addWebhookEndpoint(allowing, CLI_CALLER, { url: "http://127.0.0.2/h", events: ["license.created"] }))).toMatch(/^invalid_request: url /);
  });

  test("address classes: public ones pass, the rest do not", () => {
    for (const a of ["8.8.8.8", "93.184.215.14", "2606:4700::1111", "::ffff:8.8.8.8"]) expect([a, isPublicAddress(a)]).toEqual([a, true]);
    for (const a of [
      "127.0.0.1",
      "10.0.0.1",
      "172.31.255.255",
      "192.168.0.1",
      "169.254.169.254",
      "100.100.100.200",
      "0.0.0.0",
      "255.255.255.255",
      "::1",
      "::",
      "::ffff:10.0.0.1",
      "::ffff:7f00:1",
      "fc00::1",
      "fe80::1",
      "ff02::1",
      "64:ff9b::a00:1",
      "2002:a00:1::1",
      "2001:db8::1",
      "not an ip",
    ])
      expect([a, isPublicAddress(a)]).toEqual([a, false]);
  });

  test("IPv6 forms that embed an IPv4 address (mapped, SIIT ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96) are judged as that IPv4 address", async () => {
    const privateOnes = [
      "::ffff:0:127.0.0.1",
      "::ffff:0:7f00:1",
      "::ffff:0:10.0.0.1",
      "0:0:0:0:ffff:0:c0a8:101",
      "::FFFF:0:169.254.169.254",
      "64:ff9b::127.0.0.1",
      "64:ff9b::a9fe:a9fe",
      "::ffff:192.168.1.1",
    ];
    for (const a of privateOnes) {
      expect([a, embeddedIPv4(a) !== null, isPublicAddress(a)]).toEqual([a, true, false]);
      expect([a, await code(addWebhookEndpoint(d, CLI_CALLER, { url: `https://[${a}]/h`, events: ["license.created"] }))]).toEqual([
        a,
        expect.stringMatching(/^invalid_request: url /),
      ]);
      expect(refusedAddresses(NO_EXCEPTIONS, ["93.184.215.14", a])).toBe(a);
    }
    expect(embeddedIPv4("::ffff:0:192.0.2.33")).toBe("192.0.2.33");
    for (const a of ["::ffff:0:8.8.8.8", "64:ff9b::8.8.8.8"]) expect([a, isPublicAddress(a)]).toEqual([a, true]);
    for (const a of ["2606:4700::1111", "::1", "fe80::1"]) expect(embeddedIPv4(a)).toBeNull();
  });

  test("at connection time the name is resolved and checked: one that resolves to loopback (DNS rebinding) is refused unconnected, and recorded as 'address not allowed'", async () => {
    const https = tlsReceiver();
    try {
      await addWebhookEndpoint(d, CLI_CALLER, { url: `https://hooks.example:${https.port}/h`, events: ["license.created"] });
      await createLicense(d, CLI_CALLER, licenseBody);
      const resolved: string[] = [];
      const rebinding = async (host: string) => (resolved.push(host), ["93.184.215.14", "127.0.0.1"]);
      await new WebhookWorker({ store: d.store, clock, log: silentLogger, resolve: rebinding, ca: tls.cert }).tick();
      expect(resolved).toEqual(["hooks.example"]);
      expect(https.hosts).toEqual([]);
      const { delivery, attempt } = await onlyAttempt();
      expect(delivery).toMatchObject({ status: "pending", attempts: 1 });
      expect(attempt).toMatchObject({ statusCode: null, error: "address not allowed" });
    } finally {
      await https.stop();
    }
  });

  test("the connection goes to the checked address with the name as Host and TLS server name: real TLS verified for the name, which no resolver knows", async () => {
    const https = tlsReceiver();
    try {
      // The operator allows the address 127.0.0.1 (not the name): hooks.example passes only because it resolves there.
      const destinations = { allowHosts: ["127.0.0.1"] };
      await addWebhookEndpoint(d, CLI_CALLER, { url: `https://hooks.example:${https.port}/h`, events: ["license.created"] });
      await createLicense(d, CLI_CALLER, licenseBody);
      const resolve = async (host: string) => (host === "hooks.example" ? ["127.0.0.1"] : []);
      await new WebhookWorker({ store: d.store, clock, log: silentLogger, resolve, destinations, ca: tls.cert }).tick();
      expect(https.hosts).toEqual([`hooks.example:${https.port}`]);
      expect((await onlyAttempt()).attempt).toMatchObject({ statusCode: 204, error: null });

      // A name whose certificate does not match: a plain "TLS error", not the runtime's text
      await addWebhookEndpoint(d, CLI_CALLER, { url: `https://other.example:${https.port}/h`, events: ["license.created"] });
      await createLicense(d, CLI_CALLER, licenseBody);
      await new WebhookWorker({ store: d.store, clock, log: silentLogger, resolve: async () => ["127.0.0.1"], destinations, ca: tls.cert }).tick();
      const [latest] = (await listDeliveries(d, CLI_CALLER, { status: "pending" })).deliveries;
      expect((await showDelivery(d, CLI_CALLER, latest!.id)).attempts[0]).toMatchObject({ statusCode: null, error: "TLS error" });
      expect(https.hosts.filter((h) => h.startsWith("other.example"))).toEqual([]);
    } finally {
      await https.stop();
    }
  });

  test("an endpoint added while its host was allowed is not delivered to once the setting no longer allows it", async () => {
    await addWebhookEndpoint({ ...d, webhookDestinations: { allowHosts: ["127.0.0.1"] } }, CLI_CALLER, { url: receiver.url, events: ["license.created"] });
    await createLicense(d, CLI_CALLER, licenseBody);
    await new WebhookWorker({ store: d.store, clock, log: silentLogger }).tick();
    expect(receiver.received).toEqual([]);
    expect((await onlyAttempt()).attempt).toMatchObject({ statusCode: null, error: "address not allowed" });
  });

  test("--webhook-allow-hosts: names lower-cased without a trailing dot, IPv6 canonical; a malformed entry is refused", () => {
    const dir = tempDir("keyturn-whcfg-");
    try {
      const base = { variant: "alpha", "base-url": "https://x.example", data: join(dir, "data"), keys: dir, releases: dir };
      expect(toConfig(base, "admin").webhookAllowHosts).toEqual([]);
      expect(toConfig({ ...base, "webhook-allow-hosts": "Hooks.Internal., 127.0.0.1,[0:0::1], fd00::0:1" }, "admin").webhookAllowHosts).toEqual([
        "hooks.internal",
        "127.0.0.1",
        "::1",
        "fd00::1",
      ]);
      for (const bad of ["http://x", "a b", "x/y", "-x.example"])
        expect(() => toConfig({ ...base, "webhook-allow-hosts": bad }, "admin")).toThrow(/not a host name or address/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
