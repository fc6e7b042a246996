/** Scenario 4a's mix and what it reads of the server's memory, for bench/run.ts and bench/memory-history.ts. */
import { readFileSync } from "node:fs";
import { devicePrefix, MANIFEST_PATH } from "./fixture";
import type { Running } from "./keyturn";
import { median, wrk } from "./wrk";

/** A token for the mix: one installation activated with the site's licence key. */
export async function activate(url: string, key: string): Promise<string> {
  const device = { hash: "B".repeat(43), name: "Bench PC", platform: "win-x64", version: "1.0.0", product: "alpha" };
  const r = await fetch(`${url}/api/v1/licenses/activate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ key, device }),
  });
  const body = (await r.json()) as { token?: string };
  if (!body.token) throw new Error(`activation failed: ${JSON.stringify(body)}`);
  return body.token;
}

/** What the resident memory is made of (/proc/PID/status): anonymous (heaps), file-backed (the executable's pages), shared. */
export function rssSplit(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  // /proc's kB are KiB; MB here are 10^6 bytes, as the peak beside them.
  const mb = (field: string) => (Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024) / 1e6;
  return `RssAnon ${mb("RssAnon").toFixed(1)} MB, RssFile ${mb("RssFile").toFixed(1)} MB, RssShmem ${mb("RssShmem").toFixed(1)} MB`;
}

export interface MixRounds {
  readonly runs: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
}

export interface MixResult {
  /** The highest of the runs' peaks, MB (10^6 bytes). */
  readonly peakMb: number;
  /** The median achieved rate, requests a second. */
  readonly rps: number;
  /** Each run's peak, MB. */
  readonly runs: readonly number[];
  /** One line: the split at the highest peak, the RSS before the mix, each run's rate and list share. */
  readonly note: string;
}

/**
 * The 4a mix: wrk with a per-request pause (Lua delay) tuned so that 64 connections send about 10,000
 * req/s of the small answers (mixed.lua), beside a second wrk whose one connection asks for the
 * releases list about 100 times a second (releases-list.lua), 1 % of the mix. Two processes because
 * wrk hands every body to Lua once a script checks statuses, which for the list's 1.6 MB answers
 * limited the load itself (bench/README.md, "4a and 5a, eleventh round").
 */
export async function mixedLoad(
  server: Pick<Running, "url" | "pid" | "rssBytes">,
  token: string,
  keysFile: string,
  label: string,
  rounds: MixRounds,
): Promise<MixResult> {
  const idle = server.rssBytes();
  const list = await fetch(`${server.url}/api/v1/releases?product=alpha`, { headers: { authorization: `Bearer ${token}` } });
  if (list.status !== 200) throw new Error(`${label}: the releases list answered ${list.status}: ${await list.text()}`);
  await list.arrayBuffer();
  const fleet = { url: server.url, script: "mixed.lua", args: [token, keysFile, devicePrefix(), MANIFEST_PATH, "5"], connections: 64 };
  const lister = { url: server.url, script: "releases-list.lua", args: [token, "8"], connections: 1 };
  const both = async (seconds: number) => {
    const [small, lists] = await Promise.all([wrk({ ...fleet, seconds }), wrk({ ...lister, seconds })]);
    return { rps: small.rps + lists.rps, listShare: lists.requests / (small.requests + lists.requests) };
  };
  await both(rounds.warmupSeconds);
  const peaks: number[] = [];
  const rates: number[] = [];
  const listShares: number[] = [];
  let split = "";
  for (let i = 0; i < rounds.runs; i++) {
    let peak = 0;
    const sampler = setInterval(() => {
      const rss = server.rssBytes();
      if (rss > peak) (peak = rss), (split = rssSplit(server.pid));
    }, 50);
    const r = await both(rounds.seconds);
    clearInterval(sampler);
    peaks.push(peak / 1e6);
    rates.push(r.rps);
    listShares.push(r.listShare);
  }
  const note = `${label}: at the highest peak, ${split}; idle before the mix ${(idle / 1e6).toFixed(1)} MB; achieved ${rates.map((r) => r.toFixed(0)).join(", ")} req/s, of which the releases list ${listShares.map((share) => `${(share * 100).toFixed(2)} %`).join(", ")}`;
  return { peakMb: Math.max(...peaks), rps: median(rates), runs: peaks, note };
}
