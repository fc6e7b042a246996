/**
 * The program: `main.ts` imports it once `serve` has its engine option (cli/serve-engine.ts).
 * build.ts embeds it as an entry point of its own, so the executable's first image, which may
 * execute itself again at once, reads only main.ts.
 */
import { asksForHelp, COMMANDS, helpOf } from "./cli/commands";
import { runCommand, UsageError } from "./cli/io";
import { VERSION } from "./version";

const USAGE = `keyturn ${Object.keys(COMMANDS).join("|")} ... (keyturn --version, keyturn serve --help)`;

const HELP = `keyturn ${VERSION}: a self-hosted licensing and update site for desktop programs

usage: keyturn COMMAND [options]

  serve        run the site (keyturn serve --help lists every setting); --demo for a local try
  keys         make signing keys, rotate the license key (keys generate|rotate|promote); a new key for the secrets sealed in the records (keys rotate-records-key)
  license      create, list, show, update, revoke, reinstate, rekey licenses
  activation   list or deactivate installations; answer an offline request code
  release      sign and check releases; halt, resume, withdraw, restore a release
  audit        the audit trail (--ref finds the line a refusal's ref names)
  stats        installations, rollouts, activations, licenses expiring
  admin-token  admin API tokens
  console-sessions  the console sessions open now; end one
  webhook      webhook endpoints and their deliveries
  mail         the mail the site sent (keys, reminders, sign-in links); send one again
  bridge       the payment bridges: adopt the licences of the Stripe example (bridge adopt-stripe-example)
  mirror       check a vendor's site before mirroring it
  backup       an online copy of the SQLite records
  copy         move the records between SQLite and PostgreSQL
  migrate      apply pending migrations (serve does it at start too)

Wrong arguments print the command's usage (exit 2). Docs: docs/operating.md, docs/admin-api.md.
`;

const [name, ...args] = process.argv.slice(2);
const code = await runCommand(async () => {
  if (name === "--version" || name === "version") {
    process.stdout.write(`keyturn ${VERSION}\n`);
    return 0;
  }
  if (name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(HELP);
    return 0;
  }
  const command = name && Object.hasOwn(COMMANDS, name) ? COMMANDS[name]! : undefined;
  if (!command) throw new UsageError(USAGE, name ? `unknown command "${name}"` : "missing command");
  if (name !== "serve" && asksForHelp(args)) {
    process.stdout.write(helpOf(name!, args));
    return 0;
  }
  return command.run(args, process.env);
});
process.exit(code);
