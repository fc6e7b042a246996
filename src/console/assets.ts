import uplotCss from "uplot/dist/uPlot.min.css" with { type: "text" };
import uplotJs from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import consoleCss from "./assets/console.css" with { type: "text" };
import consoleJs from "./assets/console.js" with { type: "text" };

/**
 * The console's and portal's files, embedded in the executable as text (no CDN: a closed network
 * works). uPlot 1.6.32 is pinned in package.json and vendored from node_modules at build time.
 */
export interface Asset {
  readonly bytes: Uint8Array;
  readonly type: string;
  readonly etag: string;
}

const asset = (text: string, type: string): Asset => {
  const bytes = new TextEncoder().encode(text);
  return { bytes, type, etag: `"${new Bun.CryptoHasher("sha256").update(bytes).digest("hex").slice(0, 32)}"` };
};

const CSS = "text/css;charset=utf-8";
const JS = "text/javascript;charset=utf-8";

export const ASSETS: Readonly<Record<string, Asset>> = {
  "console.css": asset(consoleCss, CSS),
  "console.js": asset(consoleJs, JS),
  "uplot.css": asset(uplotCss, CSS),
  "uplot.js": asset(uplotJs, JS),
};
