/**
 * Semantic-version order: dotted numbers compare numerically (1.10.0 after 1.9.0), a pre-release
 * comes before its release (1.2.0-beta.1 < 1.2.0), pre-release identifiers compare numerically when
 * both are numbers and as text otherwise (numbers first); build metadata after `+` is ignored.
 * Returns <0, 0 or >0.
 */
export function compareVersions(a: string, b: string): number {
  const [coreA, preA] = split(a);
  const [coreB, preB] = split(b);
  const byCore = compareParts(coreA, coreB);
  if (byCore !== 0) return byCore;
  if (preA === null || preB === null) return preA === preB ? 0 : preA === null ? 1 : -1;
  return compareParts(preA, preB);
}

function split(v: string): [string[], string[] | null] {
  const noBuild = v.split("+")[0]!;
  const dash = noBuild.indexOf("-");
  const core = dash < 0 ? noBuild : noBuild.slice(0, dash);
  return [core.split("."), dash < 0 ? null : noBuild.slice(dash + 1).split(".")];
}

function compareParts(a: string[], b: string[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined) return x === undefined ? -1 : 1;
    const nx = /^\d+$/.test(x);
    const ny = /^\d+$/.test(y);
    const c = nx && ny ? Number(x) - Number(y) : nx !== ny ? (nx ? -1 : 1) : x < y ? -1 : x > y ? 1 : 0;
    if (c !== 0) return c;
  }
  return 0;
}
