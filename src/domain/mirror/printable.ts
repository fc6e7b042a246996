/** Text from elsewhere (a vendor's answer, a file name) made safe for a terminal or a log line: control characters escaped, length capped. */
export function printable(text: string, max = 300): string {
  const escaped = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
  return escaped.length > max ? `${escaped.slice(0, max)}…` : escaped;
}
