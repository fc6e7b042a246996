import type { MailableLicences } from "./types";

/** SQLite's JSON path (json_extract) of one metadata key, quoted as JSON so that any name is one key. */
export const metadataPath = (key: string | undefined): string => `$.${JSON.stringify(key ?? "")}`;

/** The paths of MailableLicences' two metadata keys. */
export const metadataPaths = (mailable: MailableLicences | undefined): [string, string] => [metadataPath(mailable?.without), metadataPath(mailable?.unless)];
