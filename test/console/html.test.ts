import { expect, test } from "bun:test";
import { html, jsonData } from "../../src/console/html";

// The console's one way to write HTML: every value escaped, in text and in quoted attributes.
test("values are escaped in text and attributes; only html`` fragments pass through", () => {
  const name = `<script>alert(1)</script>"' & <b>`;
  const out = html`<p title="${name}">${name}</p>${html`<i>${name}</i>`}`.text;
  expect(out).toBe(
    '<p title="&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39; &amp; &lt;b&gt;">&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39; &amp; &lt;b&gt;</p>' +
      "<i>&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39; &amp; &lt;b&gt;</i>",
  );
});

test("lists are joined, null, undefined and false render nothing, numbers as text", () => {
  expect(html`<ul>${["<a>", html`<li>${1}</li>`]}</ul>${null}${undefined}${false}${0}`.text).toBe("<ul>&lt;a&gt;<li>1</li></ul>0");
});

test("chart data cannot close its script block", () => {
  const block = jsonData("d", { label: "</script><script>alert(1)</script>" }).text;
  expect(block).not.toContain("</script><script>");
  expect(block.match(/<\/script>/g)).toHaveLength(1);
  const inner = block.slice(block.indexOf(">") + 1, block.lastIndexOf("</script>"));
  expect(JSON.parse(inner)).toEqual({ label: "</script><script>alert(1)</script>" });
});
