import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { KeyturnError } from "../errors";
import { checkEndpointUrl, isAllowedHost, normalHost, refusedAddresses, type DestinationPolicy } from "./destination";

export interface SendOptions {
  readonly destinations: DestinationPolicy;
  readonly timeoutMs: number;
  readonly fetch: typeof fetch;
  /** A host name's addresses; the system resolver unless a test gives another. */
  readonly resolve: (host: string) => Promise<string[]>;
  /** Certificate authorities trusted besides the system's (PEM); for tests with their own. */
  readonly ca?: string;
}

export interface SendResult {
  readonly statusCode: number | null;
  /** A plain category, never the runtime's text (it would tell a token holder about the network). */
  readonly error: string | null;
}

export const systemResolve = async (host: string): Promise<string[]> => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

export const ADDRESS_NOT_ALLOWED = "address not allowed";

class Refused extends Error {}

/**
 * POSTs one attempt. Unless the operator allowed the host, its name is resolved here, every address
 * checked, and the connection made to the checked address with the name as Host and TLS server name
 * (so the certificate is still verified for the name): a name that resolves elsewhere a second time
 * (DNS rebinding) changes nothing. Redirects are not followed.
 */
export async function send(url: string, headers: Record<string, string>, body: string, o: SendOptions): Promise<SendResult> {
  const signal = AbortSignal.timeout(o.timeoutMs);
  try {
    const target = new URL(checkUrl(url, o.destinations));
    const host = normalHost(target.hostname);
    let connectTo = target;
    let sendHeaders = headers;
    let serverName: string | undefined;
    if (!isAllowedHost(o.destinations, host)) {
      const addresses = isIP(host) ? [host] : await untilAborted(o.resolve(host), signal);
      if (refusedAddresses(o.destinations, addresses) !== null) throw new Refused();
      const address = addresses[0]!;
      if (!isIP(host)) {
        connectTo = new URL(target);
        connectTo.hostname = isIP(address) === 6 ? `[${address}]` : address;
        sendHeaders = { ...headers, host: target.host };
        serverName = host;
      }
    }
    const tls = serverName || o.ca ? { ...(serverName ? { serverName } : {}), ...(o.ca ? { ca: o.ca } : {}) } : undefined;
    const answer = await o.fetch(connectTo, { method: "POST", headers: sendHeaders, body, redirect: "manual", signal, ...(tls ? { tls } : {}) });
    await answer.body?.cancel().catch(() => undefined);
    const ok = answer.status >= 200 && answer.status < 300;
    return { statusCode: answer.status, error: ok ? null : `answered ${answer.status}` };
  } catch (e) {
    return { statusCode: null, error: signal.aborted ? "timeout" : category(e) };
  }
}

/** The stored URL checked again: the setting may have changed since it was added. */
function checkUrl(url: string, destinations: DestinationPolicy): string {
  try {
    return checkEndpointUrl(url, destinations);
  } catch (e) {
    if (e instanceof KeyturnError) throw new Refused();
    throw e;
  }
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    work.then(resolve, reject);
  });
}

function category(e: unknown): string {
  if (e instanceof Refused) return ADDRESS_NOT_ALLOWED;
  const code = String((e as { code?: unknown })?.code ?? "");
  const message = String((e as Error)?.message ?? "");
  if (code === "ECONNREFUSED" || code === "ConnectionRefused") return "connection refused";
  if (code === "ENOTFOUND" || code === "EAI_NONAME" || code === "EAI_AGAIN") return "name not resolved";
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/.test(code) || /\b(TLS|SSL|certificate)\b/i.test(message))
    return "TLS error";
  return "connection failed";
}
