/** The compiled executable for tests that spawn it: dist/keyturn, built by build.ts once per test process. */
import { buildExecutable } from "../build";

let built: Promise<string> | null = null;

export function executable(): Promise<string> {
  return (built ??= buildExecutable());
}
