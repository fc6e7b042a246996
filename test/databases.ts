import { RedisClient, SQL, type Subprocess } from "bun";
import { randomBytes } from "node:crypto";

/** The machine's PostgreSQL and Redis for tests (`.ci/run` sets both); tests that need them skip without. */
export const PG_URL = process.env.KEYTURN_TEST_POSTGRES_URL ?? null;
export const REDIS_URL = process.env.KEYTURN_TEST_REDIS_URL ?? null;

/** Prints why a file's tests are skipped, so a green run without the databases says so. */
export function announceSkip(file: string, variable: "KEYTURN_TEST_POSTGRES_URL" | "KEYTURN_TEST_REDIS_URL"): void {
  console.log(`SKIPPED ${file}: ${variable} is not set (.ci/run sets it to the machine's server)`);
}

export interface TestSchema {
  readonly name: string;
  /** PG_URL with `search_path` set to the schema: every connection opened from it lives there. */
  readonly url: string;
  drop(): Promise<void>;
}

/** A new, empty schema of its own, so parallel test files and reruns never see each other's rows. */
export async function freshSchema(): Promise<TestSchema> {
  if (!PG_URL) throw new Error("KEYTURN_TEST_POSTGRES_URL is not set");
  const name = `kt_test_${process.pid}_${randomBytes(5).toString("hex")}`;
  const admin = new SQL(PG_URL, { max: 1 });
  await admin.unsafe(`CREATE SCHEMA ${name}`);
  const url = new URL(PG_URL);
  url.searchParams.set("search_path", name);
  return {
    name,
    url: url.href,
    async drop() {
      await admin.unsafe(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      await admin.close();
    },
  };
}

/** A private redis-server this test may stop and start again (the shared one is never touched). */
export async function privateRedis(port: number): Promise<Subprocess> {
  const proc = Bun.spawn([Bun.which("redis-server")!, "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdout: "ignore",
    stderr: "ignore",
  });
  const probe = new RedisClient(`redis://127.0.0.1:${port}`, { enableOfflineQueue: false, connectionTimeout: 200 });
  for (let i = 0; i < 100; i++) {
    // It exits at once when the port is taken: said now, not after a hundred refused connections.
    if (proc.exitCode !== null) throw new Error(`redis-server exited (${proc.exitCode}) on port ${port}`);
    try {
      await probe.connect();
      await probe.send("PING", []);
      probe.close();
      return proc;
    } catch {
      await Bun.sleep(20);
    }
  }
  throw new Error("redis-server did not start");
}
