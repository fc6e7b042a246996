import { ConfigError } from "../config/parse";
import type { Store } from "../store/types";

/**
 * One process serves one variant, and its records are that variant's: licences, installations and
 * release lanes of alpha mean nothing to beta. The first start notes the variant in the records
 * (records older than the note have only ever served one: their next start notes it); a process of
 * another variant on them refuses before it serves or changes anything.
 */
export async function checkRecordsVariant(store: Store, variant: string, now: number): Promise<void> {
  const note = await store.noteVariant(variant, now);
  if (note.variant !== variant)
    throw new ConfigError(
      "variant",
      `these records (${store.kind}) are variant ${note.variant}'s, noted at their first start on ${new Date(note.noted).toISOString()}: ` +
        `start with --variant ${note.variant}, or give ${variant} records of its own (another --data or --database)`,
    );
}
