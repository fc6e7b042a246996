import { Type } from "@sinclair/typebox";
import { FEED_CREDENTIAL_SEGMENT, type FeedCredentials } from "../../domain/feed-credential";
import { API_PREFIX, endpoint, type Endpoint, type ParamDoc } from "../endpoint";
import { json } from "../respond";
import { BEARER_ERRORS, NO_STORE } from "./shared";

/**
 * The feeds whose clients cannot send an Authorization header, so each is also answered with a
 * feed credential in its path: Velopack (its Rust core, shared by its Node, Rust, Python and C++
 * SDKs, sends no custom header), Squirrel.Windows (Update.exe sends none) and Squirrel.Mac (its
 * check carries Electron's headers, its zip download none: SQRLUpdater's requestForDownload). A
 * feed is named by its path's first segment below /feeds.
 */
export const URL_CREDENTIAL_FEEDS: readonly string[] = ["velopack", "squirrel", "squirrel-mac"];

const CREDENTIAL_PARAM: ParamDoc = {
  name: "credential",
  description: "A feed credential (POST /feeds/credential): stands for the installation as its entitlement token does, on feeds only",
};

const PATH_HEAD = `${API_PREFIX}/feeds/${FEED_CREDENTIAL_SEGMENT}/`;

/** The base of the feed URLs that carry `credential` in their path: a feed's path below /feeds follows it. */
export function credentialFeedsUrl(baseUrl: string, credential: string): string {
  return `${baseUrl}${PATH_HEAD}${credential}`;
}

/** The credential of a path `/api/v1/feeds/credential/<credential>/…` (the auth macro's input), or "" when it has none. */
export function credentialOfPath(path: string): string {
  if (!path.startsWith(PATH_HEAD)) return "";
  const end = path.indexOf("/", PATH_HEAD.length);
  return end < 0 ? "" : path.slice(PATH_HEAD.length, end);
}

/**
 * A feed endpoint answered below `/feeds/credential/{credential}/` instead of with the bearer:
 * the same handler and answers, the installation found from the credential in the path. Files a
 * feed names relatively (Velopack's FileName) resolve below the same URL, credential included.
 */
export function withCredentialInPath(e: Endpoint): Endpoint {
  if (!e.path.startsWith("/feeds/")) throw new Error(`${e.path} is not a feed`);
  return {
    ...e,
    path: `/feeds/${FEED_CREDENTIAL_SEGMENT}/{credential}${e.path.slice("/feeds".length)}`,
    summary: `${e.summary}. The feed credential in the path stands for the bearer token`,
    auth: "feed-credential",
    params: [CREDENTIAL_PARAM, ...(e.params ?? [])],
  };
}

const FeedCredentialAnswer = Type.Object({
  ok: Type.Literal(true),
  credential: Type.String({ description: "The feed credential (a compact JWS); keep it as secret as the token" }),
  expires: Type.String({ format: "date-time", description: "The token's own expiry: the credential ends with it" }),
  url: Type.String({ description: "The base of feed URLs that carry it: append a feed's path below /feeds, e.g. /velopack/{product}/{channel}" }),
});

/**
 * POST /feeds/credential (the bearer's installation gets a feed credential), and the feeds of
 * URL_CREDENTIAL_FEEDS answered with the credential in their path.
 */
export function feedCredentialEndpoints(credentials: FeedCredentials, baseUrl: string, feeds: readonly Endpoint[]): Endpoint[] {
  const issue = endpoint({
    method: "POST",
    path: "/feeds/credential",
    summary:
      "A feed credential for the bearer's installation, for updaters that cannot send the Authorization header (Velopack): it ends with the token, is revoked with it, opens only this installation's feeds",
    auth: "entitlement",
    budget: "api",
    audit: "update",
    answer: FeedCredentialAnswer,
    errors: [...BEARER_ERRORS, "licensing_unavailable"],
    handler: ({ principal }) => {
      const { credential, expires } = credentials.issue(principal);
      return json({ ok: true, credential, expires, url: credentialFeedsUrl(baseUrl, credential) }, 200, NO_STORE);
    },
  });
  const twins = feeds.filter((e) => URL_CREDENTIAL_FEEDS.includes(e.path.split("/")[2] ?? "")).map(withCredentialInPath);
  return [...feeds, issue, ...twins];
}
