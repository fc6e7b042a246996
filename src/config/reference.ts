import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_FILE_ENV, envName, SETTINGS } from "./settings";

/** Where the generated reference lives, from the repository root. */
export const REFERENCE_PATH = "docs/configuration.md";

/** Inside a Markdown table cell, `|` ends the cell, a line break ends the row and `<` may open a tag. */
function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("<", "\\<").replaceAll("\n", " ");
}

/** docs/configuration.md, made from SETTINGS: written by `bun src/config/reference.ts`, checked by a test. */
export function configurationReference(): string {
  const rows = SETTINGS.map((s) => {
    const def = s.default === undefined || s.default === "" ? "—" : `\`${s.default}\``;
    return `| \`--${s.flag}\` | \`${envName(s.flag)}\` | ${def} | ${cell(s.help)} |`;
  });
  return [
    "# Configuration",
    "",
    "<!-- Generated from SETTINGS in src/config/settings.ts by `bun src/config/reference.ts`; do not edit by hand. -->",
    "",
    "`keyturn serve` and the admin commands read every setting from a flag, from `KEYTURN_<FLAG>` in the",
    `environment, or from a TOML file given with \`--config FILE\` (or \`${CONFIG_FILE_ENV}\`) whose top-level keys`,
    'are the flag names (`base-url = "https://updates.example.com"`; a list may be a TOML array). Flags win',
    "over the environment, which wins over the file, which wins over the defaults below. `keys generate`",
    "and `release check` read `--variant`, `--keys` and `--releases` from their flags or the environment.",
    "",
    "Everything is validated once at start: a bad value (an unknown variant, a base URL that is not https,",
    "an unreadable directory, a malformed duration such as `7 days`, an unknown key in the TOML file) stops",
    "keyturn with exit code 2 and one line naming the setting, e.g.",
    '`keyturn: --base-url: must be an https URL (got "http://x")`. `keyturn serve --help` prints the same table.',
    "",
    "Durations are a number with `s`, `m`, `h`, `d` or `w` (`600s`, `12h`, `7d`); rates are",
    "`requests/window` (`20/60s`); lists are comma-separated. A flag that takes a value takes the",
    "argument after it, even one beginning with `-` (`release why --device -Qx… --license lic_…`: a",
    "device hash is base64url); `--flag=value` reads the same.",
    "",
    "| flag (and TOML key) | environment | default | meaning |",
    "|---|---|---|---|",
    ...rows,
    "",
    "`--base-url` has no default in `serve`; the admin commands use `https://localhost:<port>`, the demo",
    "`http://<--host>:<port>` (`http://127.0.0.1:8080`: the address its banner prints; open the console there).",
    "Staff sign-in is on only when `--identity-issuer`, `--identity-client-id` and `--identity-groups`",
    "are all set. The variants differ only as the spec's table says; keyturn keeps that table as data in",
    "`src/config/variants.ts` (key prefix, device text, token `typ` and `aud`, default kid, manifest file",
    "name, products, what makes one installation, how `seat_limit` names the holders).",
    "",
    "Besides settings, the TOML file may hold `[plans.NAME]` tables: templates of licences",
    "([licence-models.md](licence-models.md#plans)).",
    "",
  ].join("\n");
}

if (import.meta.main) {
  const file = join(import.meta.dir, "..", "..", REFERENCE_PATH);
  writeFileSync(file, configurationReference());
  process.stdout.write(`wrote ${file}\n`);
}
