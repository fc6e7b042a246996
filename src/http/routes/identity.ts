import { Elysia } from "elysia";
import type { AppDeps } from "../deps";
import { jsonBody } from "../body";
import { ChallengeBody, ExchangeBody } from "../schemas";

const challengeBody = jsonBody(ChallengeBody);
const exchangeBody = jsonBody(ExchangeBody);

/** GET /auth/identity, POST /auth/identity/challenge and /auth/identity/exchange. */
export function identityRoutes(d: AppDeps) {
  const { staffSignIn } = d;
  return new Elysia()
    .get("/auth/identity", () => ({ ok: true, ...staffSignIn.info() }))
    .post(
      "/auth/identity/challenge",
      async ({ request }) => {
        staffSignIn.requireEnabled();
        const body = await challengeBody.read(request);
        return { ok: true, ...(await staffSignIn.challenge(body.device)) };
      },
      { parse: "none" },
    )
    .post(
      "/auth/identity/exchange",
      async ({ request }) => {
        staffSignIn.requireEnabled();
        const body = await exchangeBody.read(request);
        return { ok: true, ...(await staffSignIn.exchange(body.id_token, body.device, d.context(request))) };
      },
      { parse: "none" },
    );
}
