// Small text helpers shared by the tree, the status bar and the preview.

export function compactTokens(n: number): string {
  if (n < 1000) return String(n);
  const k = n / 1000;
  return `${k < 10 ? k.toFixed(1).replace(/\.0$/, '') : Math.round(k)}k`;
}

/** The server's conservative token estimate (engine/tokens.py `estimate_tokens`): about 3 ASCII
 *  characters per token, one token per UTF-8 byte of anything else. */
export function estimateTokens(text: string): number {
  const bytes = new TextEncoder().encode(text);
  const ascii = bytes.filter((b) => b < 0x80).length;
  return Math.floor((ascii + 2) / 3) + (bytes.length - ascii) + 1;
}

/** One line, at most `max` characters, whitespace collapsed. */
export function excerpt(text: string, max = 80): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** A fence longer than any backtick run inside `text`, so model text cannot close it. */
export function fence(text: string, info = ''): string {
  const longest = Math.max(2, ...Array.from(text.matchAll(/`+/g), (m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${info}\n${text}\n${ticks}`;
}

/** `text` as plain Markdown text: every character Markdown or HTML would read as structure is
 *  escaped, so a summary renders as the words it is and cannot forge links, headings or HTML. */
export function plainMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!<>|~&]/g, '\\$&');
}

/** `text` as a Markdown block quote of plain text (blank lines kept as paragraph breaks). */
export function quoteText(text: string): string {
  return text.split('\n').map((line) => (line.trim() ? `> ${plainMarkdown(line)}` : '>')).join('\n');
}

export function formatTime(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace('T', ' ').slice(0, 16);
}
