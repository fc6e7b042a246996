import { readSettings, toConfig } from "../config/config";
import { ConfigError } from "../config/parse";
import { SETTINGS, envName } from "../config/settings";
import { Admin } from "../domain/admin/operator";
import { privateKeyFiles, unusableLicenseKeys } from "../domain/keys";
import { startRetention } from "../domain/retention";
import { WebhookWorker } from "../domain/webhooks/worker";
import { MailWorker } from "../domain/mail/worker";
import { createApp } from "../http/app";
import { VERSION } from "../version";
import { startMetricsListener } from "./metrics-listener";
import { compose, openStore } from "../compose";
import { RecordSeal } from "../domain/record-seal";
import type { Logger } from "../config/log";
import { escapeControl } from "../config/text";
import type { KeyHolder } from "../domain/key-holder";
import type { Licensing } from "../domain/licensing";
import { demoSettings, ensureDemoAdminToken, ensureDemoKeys, ensureDemoLicense, printDemoBanner } from "./demo";
import { out } from "./io";
import { startTransport, transportMode } from "./transport";
import { CollectionPacing } from "./collection-pacing";

export const SERVE_USAGE = "keyturn serve --variant alpha|beta|gamma --base-url https://... [options]  (keyturn serve --help)";

export function serveHelp(): string {
  const lines = ["usage: " + SERVE_USAGE, "", "options (each also read from KEYTURN_<NAME> and --config FILE.toml):"];
  for (const s of SETTINGS)
    lines.push(`  --${s.flag.padEnd(22)} ${s.help}${s.default !== undefined && s.default !== "" ? ` [${s.default}]` : ""}  (${envName(s.flag)})`);
  return lines.join("\n");
}

/** `keyturn serve`: validates the settings, opens records and keys, and serves the API. */
export async function serveCommand(args: string[], env: Record<string, string | undefined>): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    for (const line of serveHelp().split("\n")) out(line);
    return 0;
  }
  const read = readSettings(args, env);
  const settings = { ...read.settings };
  if (settings.demo === "true") {
    await demoSettings(settings, read.explicit);
  }
  const config = toConfig(settings, "serve", read.tables);
  if (config.mirror) {
    if (config.demo) throw new ConfigError("demo", "a mirror serves its vendor's tokens and tree: leave out --demo");
    const privates = privateKeyFiles(config.keysDir);
    if (privates.length > 0)
      throw new ConfigError("keys", `a mirror holds no private key: remove ${privates.join(", ")} from ${config.keysDir} (keep only *.pub.pem)`);
  }
  if (config.demo) await ensureDemoKeys(config);
  // A license key that is there but cannot be used would leave licensing off behind a warning.
  const unusable = unusableLicenseKeys(config.keysDir, config.variant);
  if (unusable.length > 0)
    throw new ConfigError(
      "keys",
      `${unusable.map((u) => `${u.path} ${u.why}`).join("; ")}; without it every activation would answer 503 licensing_unavailable`,
    );

  const records = await openStore(config);
  // Sealed records whose key is missing or another would leave webhooks pending for ever: refused before anything starts.
  let sealWarnings: string[];
  try {
    sealWarnings = await new RecordSeal(config.keysDir, records).verify();
  } catch (e) {
    await records.close();
    throw e;
  }
  const { store, keys, services, rateLimitStore, mirror } = await compose(config, { watchReleases: true, store: records });
  const log = services.log;
  for (const warning of sealWarnings) log.warn(warning);
  if (config.mirror) {
    log.info("mirror", { of: config.mirror.of, pollMs: config.mirror.pollMs, maxStalenessSeconds: config.mirror.maxStalenessSeconds });
    if (![...keys.verify.values()].some((k) => k.purpose === "license"))
      log.warn(`no ${config.variant.name}-license-*.pub.pem in --keys: every token of ${config.mirror.of} will be refused`, { keys: config.keysDir });
  } else if (!keys.signing) log.warn("no license signing key: activate, refresh and sign-in answer licensing_unavailable", { keys: config.keysDir });
  const retention = startRetention({ store, clock: services.clock, log, auditRetentionSeconds: config.auditRetentionSeconds });
  const webhooks = new WebhookWorker({
    store,
    clock: services.clock,
    log,
    destinations: { allowHosts: config.webhookAllowHosts },
    seal: services.admin.seal,
  });
  const mailOutbox = services.admin.mail;
  const mailer =
    mailOutbox && config.mail
      ? new MailWorker({
          store,
          mail: mailOutbox.d.store,
          outbox: mailOutbox,
          config: config.mail,
          clock: services.clock,
          log,
          retentionMs: config.auditRetentionSeconds * 1000,
        })
      : null;
  const app = createApp(services);
  const pacing = new CollectionPacing();
  const transport = startTransport(
    config,
    (request, peer) => {
      pacing.request();
      return app.handle(request, peer);
    },
    log,
  );
  const metricsListener = config.metricsListen && services.metrics ? startMetricsListener(config.metricsListen, services.metrics, log) : null;

  // The signal handlers come first, before anything is awaited or printed: from the moment the
  // server listens, SIGTERM or SIGINT (Ctrl-C on the demo) stops it in order, never mid-write.
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((r) => (resolveExit = r));
  let stopping = false;
  // The demo's licence and token are written to the records: a stop waits for them before closing the store.
  let demoReady: Promise<void> = Promise.resolve();
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down: no new connections, finishing requests in flight", { signal, timeoutSeconds: config.shutdownTimeoutSeconds });
    services.releases.close();
    retention.stop();
    await mirror?.stop();
    void metricsListener?.stop(true);
    const { drained } = await transport.stop(config.shutdownTimeoutSeconds * 1000);
    if (!drained) log.warn("shutdown timeout: closed connections whose requests had not finished");
    await webhooks.stop();
    await mailer?.stop();
    await demoReady.catch(() => undefined);
    await services.adoption.close();
    await services.installReports.close();
    await rateLimitStore.close();
    await store.close();
    log.info("stopped", { signal });
    resolveExit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGHUP", () => {
    log.info(transport.tls ? "SIGHUP: re-reading the release tree, the keys and the certificate" : "SIGHUP: re-reading the release tree and the keys");
    void services.releases.rescan();
    void reloadKeys(keys, services.licensing, log);
    if (transport.tls) void transport.reloadTls();
  });

  webhooks.start();
  mailer?.start();
  const listenUrl = transport.url;
  const { mode, why } = transportMode(config);
  log.info("transport", { mode, why });
  if (!config.tls && config.trustProxy.length === 0 && !config.demo)
    log.warn("no --trust-proxy: behind a reverse proxy every client counts as the proxy's address (rate limits, audit)");

  if (config.demo) demoReady = demoBanner();
  async function demoBanner(): Promise<void> {
    const admin = new Admin(config.variant, store, services.clock, services.audit);
    const key = await ensureDemoLicense(config, store, admin);
    const token = await ensureDemoAdminToken(config, services.admin);
    if (!stopping) printDemoBanner(config, key, token, listenUrl);
  }
  await demoReady;
  if (stopping) return exited;
  mirror?.start();
  log.info("keyturn listening", {
    url: listenUrl,
    variant: config.variant.name,
    version: VERSION,
    baseUrl: config.baseUrl,
    signingKid: keys.signing?.kid ?? null,
  });
  return exited;
}

/** SIGHUP: the keys directory read again (a key added, a promotion); tokens verified with a removed key are checked again. */
async function reloadKeys(keys: KeyHolder, licensing: Licensing, log: Logger): Promise<void> {
  try {
    const changed = await keys.reload();
    for (const w of changed.warnings) log.warn(w);
    if (changed.removed.length > 0) licensing.forgetVerifiedTokens();
    log.info("keys reloaded", { signingKid: changed.signing, added: changed.added, removed: changed.removed });
  } catch (e) {
    log.error("keys not reloaded: keeping those loaded before", { error: escapeControl(String((e as Error)?.message ?? e), 300) });
  }
}
