import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { tempDir } from "../helpers";

/**
 * Velopack's own client: its npm binding (`velopack` 0.0.1053, the newest whose native part needs
 * no glibc above 2.34, so it loads on Debian 12) runs Velopack's Rust core, the one its Node,
 * Rust, Python and C++ SDKs share, unmodified. Only the installed app around it is made here, as
 * `vpk pack` lays it out: the package's manifest (`sq.version`, a nuspec) with the app's id,
 * version and channel, the packages folder it downloads into, and the Update binary's path.
 */
const require = createRequire(import.meta.url);
const velopack = require("velopack") as {
  UpdateManager: new (url: string, options?: unknown, locator?: unknown) => VelopackManager;
  setVelopackLogger(cb: (level: string, msg: string) => void): void;
};

export interface VelopackAsset {
  readonly PackageId: string;
  readonly Version: string;
  readonly Type: string;
  readonly FileName: string;
  readonly SHA1: string;
  readonly SHA256: string;
  readonly Size: bigint | number;
  readonly NotesMarkdown: string;
}

export interface VelopackManager {
  getCurrentVersion(): string;
  checkForUpdatesAsync(): Promise<{ TargetFullRelease: VelopackAsset; IsDowngrade: boolean } | null>;
  downloadUpdateAsync(update: unknown, progress?: (percent: number) => void): Promise<void>;
}

/** The core's log lines, for a failing test's message. */
export const velopackLog: string[] = [];
velopack.setVelopackLogger((level, msg) => {
  if (level !== "debug" && level !== "trace") velopackLog.push(`${level} ${msg}`);
});

/** An installed app (id, version, channel) and Velopack's UpdateManager for it on `feedUrl`. */
export function velopackApp(o: { id: string; version: string; channel: string; feedUrl: string }) {
  const root = tempDir("keyturn-velopack-");
  const current = join(root, "current");
  const packages = join(root, "packages");
  mkdirSync(current, { recursive: true });
  mkdirSync(packages, { recursive: true });
  const manifest = join(current, "sq.version");
  writeFileSync(
    manifest,
    `<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://schemas.microsoft.com/packaging/2013/05/nuspec.xsd">
  <metadata><id>${o.id}</id><version>${o.version}</version><title>${o.id}</title><authors>Vendor</authors><description>App</description><mainExe>${o.id}</mainExe><channel>${o.channel}</channel></metadata>
</package>
`,
  );
  const update = join(root, "Update");
  writeFileSync(update, "#!/bin/sh\n", { mode: 0o755 });
  const manager = new velopack.UpdateManager(
    o.feedUrl,
    { AllowVersionDowngrade: false, ExplicitChannel: null },
    {
      RootAppDir: root,
      UpdateExePath: update,
      PackagesDir: packages,
      ManifestPath: manifest,
      CurrentBinaryDir: current,
      IsPortable: true,
    },
  );
  return { manager, packages, root };
}
