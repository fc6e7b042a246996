import type { MailableLicences } from "./types";

/** SQLite's JSON paths (json_extract) of MailableLicences' two metadata keys, each key quoted as JSON so that any name is one key. */
export const metadataPaths = (mailable: MailableLicences | undefined): [string, string] => [
  `$.${JSON.stringify(mailable?.without ?? "")}`,
  `$.${JSON.stringify(mailable?.unless ?? "")}`,
];
