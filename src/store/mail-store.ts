import type { MailStore } from "./mail-types";
import { PostgresMailStore } from "./postgres-mail";
import { PostgresStore } from "./postgres";
import { SqliteMailStore } from "./sqlite-mail";
import { SqliteStore } from "./sqlite";
import type { Store } from "./types";

/** The mail outbox in the same records (and connection) as `store`. */
export function mailStoreOf(store: Store): MailStore {
  if (store instanceof SqliteStore) return new SqliteMailStore(store.db);
  if (store instanceof PostgresStore) return new PostgresMailStore(store.sql);
  throw new Error(`no mail outbox for a ${store.kind} store`);
}
