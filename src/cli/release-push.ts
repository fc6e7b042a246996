import type { Environment } from "../config/settings";
export const USAGE = "       keyturn release push --site URL [--halted] FOLDER";
export async function pushCommand(_args: string[], _env: Environment): Promise<number> {
  return 1;
}
