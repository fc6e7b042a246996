import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer, type SMTPServerSession } from "smtp-server";

/** A real SMTP server on loopback for tests (the `smtp-server` package); each mail is parsed with `mailparser`. */
export type SmtpMode = "ok" | "temporary" | "permanent";

export interface ReceivedMail {
  readonly envelopeTo: string[];
  readonly mail: ParsedMail;
  /** The raw message, as the client sent it. */
  readonly raw: string;
  /** Whether the connection was TLS (smtps, or upgraded with STARTTLS) when the mail came. */
  readonly secure: boolean;
}

export interface SmtpReceiver {
  readonly url: string;
  readonly port: number;
  readonly received: ReceivedMail[];
  mode: SmtpMode;
  /**
   * Holds the answer to the DATA of the next mail (once `afterKept` mails were kept) for `ms` (the
   * client waits for "250"): `holding` resolves when it begins. A mail whose client went away while held is not kept, as a server
   * that never answered has not taken it.
   */
  holdNext(ms: number, afterKept?: number): { holding: Promise<void> };
  /** Resolves once `n` mails were kept. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  /** The mail to `address` last kept; throws when none. */
  lastTo(address: string): ReceivedMail;
  stop(): Promise<void>;
}

export async function startSmtpReceiver(
  opts: { tls?: { key: string; cert: string }; secure?: boolean; auth?: { user: string; pass: string } } = {},
): Promise<SmtpReceiver> {
  const received: ReceivedMail[] = [];
  const closed = new Set<string>();
  let hold: { ms: number; afterKept: number; began: () => void } | null = null;
  const state = { mode: "ok" as SmtpMode };
  const server = new SMTPServer({
    authOptional: !opts.auth,
    // A test server on loopback: AUTH without TLS is allowed (the client decides whether it sends it).
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return callback(null, { user: auth.username });
      callback(Object.assign(new Error("Invalid username or password"), { responseCode: 535 }));
    },
    secure: opts.secure ?? false,
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : { disabledCommands: ["STARTTLS"] }),
    logger: false,
    onClose(session: SMTPServerSession) {
      closed.add(session.id);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", async () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        if (state.mode === "temporary") return callback(Object.assign(new Error("Try again later"), { responseCode: 451 }));
        if (state.mode === "permanent") return callback(Object.assign(new Error("No such mailbox"), { responseCode: 550 }));
        const held = hold && received.length >= hold.afterKept ? hold : null;
        if (held) hold = null;
        if (held) {
          held.began();
          await Bun.sleep(held.ms);
          if (closed.has(session.id)) return callback(new Error("client gone"));
        }
        received.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), mail: await simpleParser(raw), raw, secure: session.secure });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `${opts.secure ? "smtps" : "smtp"}://127.0.0.1:${port}`,
    port,
    received,
    get mode() {
      return state.mode;
    },
    set mode(m: SmtpMode) {
      state.mode = m;
    },
    holdNext(ms, afterKept = 0) {
      let began!: () => void;
      const holding = new Promise<void>((r) => (began = r));
      hold = { ms, afterKept, began };
      return { holding };
    },
    async waitFor(n, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > until) throw new Error(`waited for ${n} mails, got ${received.length}`);
        await Bun.sleep(20);
      }
      return received;
    },
    lastTo(address) {
      const found = received.findLast((r) => r.envelopeTo.includes(address));
      if (!found) throw new Error(`no mail to ${address}`);
      return found;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
