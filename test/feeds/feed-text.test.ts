import { describe, expect, test } from "bun:test";
import { electronYaml, feedText, sparkleAppcast, tauriJson, velopackJson } from "../../src/domain/releases/feed-formats";
import type { Release } from "../../src/domain/releases/release-index";
import { squirrelMacJson } from "../../src/domain/releases/squirrel";

// Issue 33, item 9: notes holding U+FFFE or U+FFFF made the Sparkle appcast invalid XML. Every
// character XML 1.0 forbids (https://www.w3.org/TR/xml/#charsets) is stripped from every feed.
const FORBIDDEN = ["\u0000", "\u0001", "\u0008", "\u000b", "\u000c", "\u001f", "\ufffe", "\uffff", "\ud800", "\udfff"];
const KEPT = 'Tab\there, LF\nand CR\r; é, ∑, 😀 (a pair), U+FFFD \ufffd & <tags> "quoted"';
const HOSTILE = FORBIDDEN.join("x") + KEPT;
const CLEAN = "x".repeat(FORBIDDEN.length - 1) + KEPT;

/** Any character XML 1.0 forbids, as the standard's Char production states it. */
const forbidden = (text: string) => /[^\t\n\r\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u.test(text);

const release = {
  manifest: { version: "2.0.0", installer: "Alpha-2.0.0-full.nupkg", released: Date.parse("2026-10-01T00:00:00Z"), size: 1234, sha256: "ab".repeat(32) },
} as unknown as Release;

/** Python's XML parser (an independent one): the document's text of `path`, or the parse error. */
function pythonXml(xml: string, path: string): { ok: boolean; text: string } {
  const script = `import sys, xml.etree.ElementTree as E
try:
    root = E.fromstring(sys.stdin.buffer.read())
except E.ParseError as e:
    print("ERROR", e); sys.exit(0)
print(root.find(sys.argv[1]).text, end="")`;
  const run = Bun.spawnSync(["python3", "-c", script, path], { stdin: Buffer.from(xml, "utf8") });
  const out = run.stdout.toString();
  return out.startsWith("ERROR") ? { ok: false, text: out } : { ok: true, text: out };
}

describe("every feed strips what XML 1.0 forbids, keeps the rest", () => {
  test("feedText removes C0 controls but tab/LF/CR, U+FFFE, U+FFFF and lone surrogates only", () => {
    expect(feedText(HOSTILE)).toBe(CLEAN);
    expect(feedText("😀")).toBe("😀");
  });

  test("the Sparkle appcast stays valid XML for Python's parser; the notes come back without the forbidden characters", () => {
    const xml = sparkleAppcast({
      title: `Alpha ${HOSTILE}`,
      items: [{ release, url: "https://licenses.example.com/x", edSignature: "sig", bundleVersion: "200", notes: HOSTILE, critical: true }],
    });
    expect(forbidden(xml)).toBe(false);
    const description = pythonXml(xml, "channel/item/description");
    expect(description.ok).toBe(true);
    // XML normalises a CR to LF when parsing; the rest is the text as sent.
    expect(description.text).toBe(CLEAN.replace("\r", "\n"));
    // The check has teeth: the same document with one U+FFFF is refused by the parser.
    expect(pythonXml(xml.replace("<description>", "<description>\uffff"), "channel/item/description").ok).toBe(false);
  });

  test("electron-updater's YAML, Tauri's and Velopack's JSON carry the notes without them", () => {
    const yaml = electronYaml({
      version: `2.0.0${"\uffff"}`,
      files: [{ url: "a\u0001.exe", sha512: "x", size: 1, blockMapSize: null }],
      releaseDate: "2026-10-01T00:00:00.000Z",
      notes: HOSTILE,
    });
    const parsed = Bun.YAML.parse(yaml) as { version: string; releaseNotes: string; path: string };
    expect(parsed.releaseNotes).toBe(CLEAN);
    expect(parsed.version).toBe("2.0.0");
    expect(parsed.path).toBe("a.exe");

    const tauri = JSON.parse(
      tauriJson({ version: "2.0.0", url: "https://x.example/a", signature: "s\ufffe", notes: HOSTILE, pubDate: "2026-10-01T00:00:00Z" }),
    );
    expect([tauri.notes, tauri.signature]).toEqual([CLEAN, "s"]);

    const velopack = JSON.parse(velopackJson([{ packageId: "Alpha\ud800", sha1: "ab", release, notes: HOSTILE }]));
    expect([velopack.Assets[0].NotesMarkdown, velopack.Assets[0].PackageId]).toEqual([CLEAN, "Alpha"]);
    for (const text of [yaml, JSON.stringify(tauri), JSON.stringify(velopack)]) expect(forbidden(text)).toBe(false);
  });

  test("Squirrel.Mac's JSON carries the notes, the name and the address without them", () => {
    const text = squirrelMacJson({
      url: "https://x.example/Alpha\u0001.zip",
      version: `2.0.0${"\ufffe"}`,
      notes: HOSTILE,
      released: release.manifest.released,
    });
    const squirrel = JSON.parse(text);
    expect([squirrel.notes, squirrel.name, squirrel.url]).toEqual([CLEAN, "2.0.0", "https://x.example/Alpha.zip"]);
    expect(forbidden(text)).toBe(false);
  });
});
