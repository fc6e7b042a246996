import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { insertEvent, openPostgresStore, type PostgresStore } from "../src/store/postgres";
import { announceSkip, freshSchema, PG_URL, type TestSchema } from "./databases";

// Issue 15: the feed's cursor under concurrent writers on PostgreSQL. Two transactions write events;
// the one that began first commits last. A reader that polls the feed throughout must still read
// every event, in order: no event may appear later below a cursor already handed out.

const run = PG_URL ? describe : describe.skip;
if (!PG_URL) announceSkip("test/feed-order-postgres.test.ts", "KEYTURN_TEST_POSTGRES_URL");

run("feed cursor on PostgreSQL with transactions committing out of order", () => {
  let schema: TestSchema;
  let store: PostgresStore;
  let writerA: SQL;
  let writerB: SQL;
  beforeAll(async () => {
    schema = await freshSchema();
    store = await openPostgresStore(schema.url);
    writerA = new SQL(schema.url, { max: 1 });
    writerB = new SQL(schema.url, { max: 1 });
  });
  afterAll(async () => {
    await Promise.all([writerA.close(), writerB.close(), store.close()]);
    await schema.drop();
  });

  const event = (id: string) => ({ id, type: "activation.deactivated", time: Date.now(), data: JSON.stringify({ id }), feed: true });

  test("the later writer waits for the earlier one, so a reader never skips an event", async () => {
    let releaseA!: () => void;
    const aHolds = new Promise<void>((r) => (releaseA = r));
    let aInserted!: () => void;
    const aInsertedYet = new Promise<void>((r) => (aInserted = r));
    const a = writerA.begin(async (tx) => {
      await insertEvent(tx, event("evt_a"));
      aInserted();
      await aHolds; // A stays open while B tries to write and the reader reads
    });
    await aInsertedYet;
    let bDone = false;
    const b = writerB
      .begin(async (tx) => {
        await insertEvent(tx, event("evt_b"));
      })
      .then(() => (bDone = true));

    // While A is open, B cannot take a seq (and so cannot commit before A): the reader sees nothing yet.
    const seen: string[] = [];
    let cursor = 0n;
    const read = async () => {
      for (const e of await store.listEvents({ after: cursor, limit: 100 })) {
        expect(BigInt(e.seq)).toBeGreaterThan(cursor);
        cursor = BigInt(e.seq);
        seen.push(e.id);
      }
    };
    for (let i = 0; i < 5; i++) {
      await read();
      await Bun.sleep(20);
    }
    expect(bDone).toBe(false);
    expect(seen).toEqual([]);

    releaseA();
    await a;
    await b;
    await read();
    expect(seen).toEqual(["evt_a", "evt_b"]);
  });
});
