/** A one-release tree (alpha/stable/win-x64), unsigned, for in-process profiling. */
import { mkdirSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";

export function makeSmallTree(root: string): void {
  const folder = join(root, "alpha", "stable", "win-x64", "1.0.0");
  mkdirSync(folder, { recursive: true });
  const installer = Buffer.from("installer\n");
  writeFileSync(join(folder, "alpha-1.0.0.exe"), installer);
  const manifest = {
    product: "alpha",
    channel: "stable",
    platform: "win-x64",
    version: "1.0.0",
    released: "2026-11-01T10:00:00+00:00",
    installer: "alpha-1.0.0.exe",
    size: installer.length,
    sha256: createHash("sha256").update(installer).digest("hex"),
  };
  writeFileSync(join(folder, "alpha-update.json"), JSON.stringify(manifest, null, 2));
  writeFileSync(join(folder, "alpha-update.json.sig"), "unchecked..signature");
}
