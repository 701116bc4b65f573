// The chat webview's HTML: strict CSP, scripts only with the per-load nonce, local resources only.
import { randomBytes } from 'node:crypto';

export interface ChatHtmlOptions {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function makeNonce(): string {
  return randomBytes(16).toString('hex');
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
    "frame-src 'none'",
  ].join('; ');
}

const escapeAttr = (value: string): string => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;')
  .replace(/</g, '&lt;');

export function chatHtml(o: ChatHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttr(contentSecurityPolicy(o.cspSource, o.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeAttr(o.styleUri)}">
<title>Topic Forest Chat</title>
</head>
<body>
<header class="toolbar">
  <span id="status" class="status" aria-live="polite"></span>
  <button id="new-thread" class="icon-button" type="button" title="New thread">New thread</button>
</header>
<main id="log" class="log" role="log" aria-live="polite" aria-label="Conversation"></main>
<form id="composer" class="composer">
  <textarea id="input" rows="3" placeholder="Ask about your code (Enter to send, Shift+Enter for a new line)" aria-label="Message"></textarea>
  <div class="composer-buttons">
    <button id="send" type="submit" disabled>Send</button>
    <button id="stop" type="button" hidden>Stop</button>
  </div>
</form>
<script nonce="${escapeAttr(o.nonce)}" src="${escapeAttr(o.scriptUri)}"></script>
</body>
</html>`;
}
