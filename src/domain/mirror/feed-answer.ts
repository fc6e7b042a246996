import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";

/**
 * The vendor's feed answer (wt EVENTS-CONTRACT.md "Vendor feed") as TypeBox schemas, and the checks
 * a page must pass before a mirror applies any of it: the shape, seqs ascending past `after`, and a
 * cursor that never goes backwards. A page that fails is refused whole.
 */
// Ids are matched against token claims, never parsed: any short text (staff licenses are `staff:<sub>`).
const id = Type.String({ minLength: 1, maxLength: 300 });
const seq = Type.String({ pattern: "^(0|[1-9][0-9]{0,19})$" });
const time = Type.String({ maxLength: 40 });
const maybeTime = Type.Union([time, Type.Null()]);

const LicenseRef = Type.Object({ id: id, expires: Type.Optional(maybeTime) });
const ActivationRef = Type.Object({ id: id });
const Release = Type.Object({ lane: Type.String({ minLength: 1, maxLength: 300 }), version: Type.String({ minLength: 1, maxLength: 100 }) });

const item = <T extends string, D extends TSchema>(type: T, data: D) =>
  Type.Object({ id: Type.String({ maxLength: 100 }), seq, type: Type.Literal(type), timestamp: time, data });

export const RELEASE_VERBS = ["published", "halted", "resumed", "withdrawn", "restored"] as const;
const KNOWN_TYPES = new Set<string>(["activation.deactivated", "license.revoked", "license.reinstated", "license.updated", ...RELEASE_VERBS.map((v) => `release.${v}`)]);

const KnownItem = Type.Union([
  item("activation.deactivated", Type.Object({ activation: ActivationRef, tokensValidUntil: time })),
  item("license.revoked", Type.Object({ license: LicenseRef, tokensValidUntil: time })),
  item("license.reinstated", Type.Object({ license: LicenseRef })),
  item("license.updated", Type.Object({ license: LicenseRef, changed: Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 }) })),
  ...RELEASE_VERBS.map((verb) =>
    item(`release.${verb}`, Type.Object({ release: Release, share: Type.Optional(Type.Union([Type.Number({ minimum: 0, maximum: 100 }), Type.Null()])) })),
  ),
]);
/** Any event: a type this mirror does not know is passed over (its seq still counts). */
const AnyItem = Type.Object({ id: Type.String({ maxLength: 100 }), seq, type: Type.String({ maxLength: 100 }), timestamp: time, data: Type.Unknown() });

const Answer = Type.Object({ ok: Type.Literal(true), events: Type.Array(AnyItem, { maxItems: 1000 }), cursor: seq });

const answerCheck = TypeCompiler.Compile(Answer);
const knownCheck = TypeCompiler.Compile(KnownItem);

export type FeedEvent = Static<typeof KnownItem>;

export interface FeedPage {
  /** Known events, seq ascending. */
  readonly events: readonly FeedEvent[];
  /** How many events the page held (known or not). */
  readonly received: number;
  /** Where the next page starts; null only when nothing has been seen yet. */
  readonly cursor: string | null;
}

/** A feed answer refused before anything of it was applied. */
export class FeedProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FeedProblem";
  }
}

/** The known events and cursor of a page asked for with `after` (null: from the beginning). */
export function parseFeedAnswer(body: unknown, after: string | null): FeedPage {
  if (!answerCheck.Check(body)) {
    const first = answerCheck.Errors(body).First();
    throw new FeedProblem(`malformed feed answer${first ? ` at ${first.path || "/"}: ${first.message}` : ""}`);
  }
  const floor = after === null ? -1n : BigInt(after);
  let previous = floor;
  const events: FeedEvent[] = [];
  for (const [i, e] of body.events.entries()) {
    const s = BigInt(e.seq);
    if (s <= previous) throw new FeedProblem(`event ${i} has seq ${e.seq}, not after ${previous < 0n ? "the start" : previous}: the feed went backwards`);
    previous = s;
    if (!KNOWN_TYPES.has(e.type)) continue;
    if (!knownCheck.Check(e)) {
      const first = knownCheck.Errors(e).First();
      throw new FeedProblem(`malformed ${e.type} event (seq ${e.seq})${first ? ` at ${first.path}: ${first.message}` : ""}`);
    }
    events.push(e);
  }
  const cursor = BigInt(body.cursor);
  if (cursor < floor) throw new FeedProblem(`cursor ${body.cursor} is before ${after}: the feed went backwards`);
  if (cursor < previous) throw new FeedProblem(`cursor ${body.cursor} is before the page's last event (${previous})`);
  // With nothing sent from the beginning there is nothing to be after yet.
  return { events, received: body.events.length, cursor: body.events.length === 0 && after === null ? null : body.cursor };
}
