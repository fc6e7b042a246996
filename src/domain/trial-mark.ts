/**
 * The metadata that marks a licence the site made for a trial (src/domain/trials.ts): the mail
 * worker words such a licence's end as a trial's end, not as a bought licence's.
 */
export const TRIAL_MARK = "trial";

export const isTrialLicence = (l: { readonly metadata?: Readonly<Record<string, string>> | null }): boolean => l.metadata?.[TRIAL_MARK] === "true";
