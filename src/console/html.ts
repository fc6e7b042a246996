/**
 * The console's one way to write HTML: a tagged template that escapes every value it is given.
 * Only what another `html` template made (or `raw` of a constant) passes through unescaped, so a
 * licensee named `<script>` is shown as text.
 */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(v: Value): string {
  if (v === null || v === undefined || v === false) return "";
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join("");
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/**
 * Data for the page's script, in a `<script type="application/json">` block (not executed, so the
 * CSP allows it). `<` is written as \u003c so no value can close the block.
 */
export function jsonData(id: string, data: unknown): Html {
  return html`<script type="application/json" id="${id}">${new Html(JSON.stringify(data).replace(/</g, "\\u003c"))}</script>`;
}
