/** Paths in log lines are cut here, so a hostile path cannot make a log line huge. */
const MAX_LOGGED_PATH = 512;

/** The admin paths that address a licence by its id or, as typed, by its key. */
const LICENSE_PATH = /^(\/api\/v1\/admin\/licenses\/)([^/]+)/;
/** A key's shape anywhere else: a prefix and five dash-separated groups of five. */
const KEY_SHAPE = /(^|\/)([A-Za-z0-9]{1,16}(?:-|%2D)(?:[A-Za-z0-9]{5}(?:-|%2D)){4}[A-Za-z0-9]{5})(?=\/|$)/gi;

/** A feed credential in a feed URL's path (feed-credential.ts): as secret as the token it stands for. */
const FEED_CREDENTIAL_PATH = /^(\/api\/v1\/feeds\/credential\/)([^/]+)/;

/**
 * A licence key shown in a log: its prefix and its last four characters, enough to tell keys apart
 * in an incident, far too little to use one.
 */
function maskKey(text: string): string {
  const prefix = /^[A-Za-z0-9]{1,16}(?=-|%2D)/i.exec(text)?.[0];
  const tail = text.length > 12 ? text.slice(-4) : "";
  return `${prefix ? prefix + "-" : ""}…${tail}`;
}

/**
 * The path as the request log writes it: a licence addressed by key (`/admin/licenses/{key}`, or
 * anything shaped like a key) masked, a feed credential replaced by its last four characters (enough
 * to tell two apart, nothing to use), then cut at MAX_LOGGED_PATH.
 */
export function loggedPath(path: string): string {
  const masked = path
    .replace(FEED_CREDENTIAL_PATH, (_, head: string, credential: string) => `${head}…${credential.length > 40 ? credential.slice(-4) : ""}`)
    .replace(LICENSE_PATH, (_, head: string, id: string) => head + (/^(lic_|staff(:|%3A))/i.test(id) ? id : maskKey(id)))
    .replace(KEY_SHAPE, (_, lead: string, key: string) => lead + maskKey(key));
  return masked.length > MAX_LOGGED_PATH ? masked.slice(0, MAX_LOGGED_PATH) + "…" : masked;
}
