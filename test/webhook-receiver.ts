/** A real webhook receiver on loopback for tests: records every request; answers as told. */
export type ReceiverMode = "ok" | "error" | "gone" | "slow";

export interface Received {
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Requests answered so far (a slow one counts once its answer is sent). */
  readonly answered: number;
  mode: ReceiverMode;
  stop(): Promise<void>;
}

export function startReceiver(mode: ReceiverMode = "ok", port = 0): Receiver {
  const received: Received[] = [];
  const state = { mode, answered: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(request) {
      received.push({ headers: Object.fromEntries(request.headers), body: await request.text() });
      if (state.mode === "error") return new Response("boom", { status: 500 });
      if (state.mode === "gone") return new Response("gone", { status: 410 });
      if (state.mode === "slow") await Bun.sleep(2_000);
      state.answered++;
      return new Response(null, { status: 204 });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hooks`,
    received,
    get answered() {
      return state.answered;
    },
    get mode() {
      return state.mode;
    },
    set mode(m: ReceiverMode) {
      state.mode = m;
    },
    stop: () => server.stop(true),
  };
}

/** A loopback port nothing listens on (taken, then released). */
export async function closedPort(): Promise<number> {
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = probe.port!;
  await probe.stop(true);
  return port;
}
