/**
 * Text from outside (device names and versions, folder names of a copied release tree, claims of
 * an ID token) reaches operators' terminals and log files. Control characters in it could move the
 * cursor, rewrite what is on screen, change the window title or forge whole log lines, so every
 * human-readable output passes through escapeControl. Beyond C0, DEL and C1 this also escapes the
 * line and paragraph separators and the bidirectional overrides and isolates, which reorder what a
 * terminal shows ("Trojan source"). Backslashes are left as they are, so paths stay readable.
 */
const CONTROL = /[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same characters except the C0 ones, which JSON.stringify already escapes. */
const NOT_ESCAPED_BY_JSON = /[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const hex = (c: string, width: number) => c.charCodeAt(0).toString(16).padStart(width, "0");

/**
 * C0 and DEL as `\x1b`, the others as `\u009b`: visible, and never acted on by a terminal. With
 * `max`, text from another site (a vendor's answer) is also cut to that length.
 */
export function escapeControl(text: string, max = Infinity): string {
  const escaped = text.replace(CONTROL, (c) => (c <= "\x7f" ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}

/**
 * For text JSON.stringify made: the characters it leaves raw, as `\uXXXX`. They can stand only
 * inside strings there, where that escape means the same character, so the JSON parses to the same value.
 */
export function escapeJsonControl(json: string): string {
  return json.replace(NOT_ESCAPED_BY_JSON, (c) => `\\u${hex(c, 4)}`);
}
