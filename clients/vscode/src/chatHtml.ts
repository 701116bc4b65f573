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
  <button id="threads" class="thread-button" type="button" title="Threads: switch, rename, delete" aria-label="Threads">
    <span id="thread-title" class="thread-title">New thread</span><span aria-hidden="true"> ▾</span>
  </button>
  <select id="model" title="Chat model" aria-label="Chat model" hidden></select>
</header>
<main id="log" class="log" role="log" aria-live="polite" aria-relevant="additions text" aria-label="Conversation" tabindex="0">
</main>
<section id="welcome" class="welcome" aria-label="Getting started">
  <p>Topic Forest is a chat about your code that remembers by topic.</p>
  <p>Older messages are grouped into topics you can see, drop, pin and expand in the Topics view.</p>
  <p>Attach code with <kbd>@</kbd> (files, @selection, @problems) or "Add Selection to Chat".</p>
  <div id="setup" class="setup"></div>
</section>
<div id="notice" class="notice" role="status" hidden></div>
<form id="composer" class="composer">
  <ul id="chips" class="chips" aria-label="Attachments"></ul>
  <ul id="mentions" class="mentions" role="listbox" aria-label="Attach" hidden></ul>
  <textarea id="input" rows="3" placeholder="Ask about your code (@ attaches a file; Enter sends, Shift+Enter for a new line)" aria-label="Message" aria-autocomplete="list" aria-controls="mentions"></textarea>
  <div class="composer-buttons">
    <span id="status" class="status" aria-live="polite"></span>
    <button id="send" type="submit" disabled>Send</button>
    <button id="stop" type="button" hidden title="Stop (Escape)">Stop</button>
  </div>
</form>
<script nonce="${escapeAttr(o.nonce)}" src="${escapeAttr(o.scriptUri)}"></script>
</body>
</html>`;
}
