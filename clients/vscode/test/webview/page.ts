// The chat page (dist/webview/chat.js + the real CSP from chatHtml) in headless Chromium: the
// server and browser every page test file shares (imported for its before/after hooks too).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { after as afterAll, before as beforeAll } from 'node:test';
import { chatHtml } from '../../src/chatHtml';
import type { FromWebview, ToWebview } from '../../src/chatMessages';

const ROOT = process.cwd(); // tests run from clients/vscode
const DIST = join(ROOT, 'dist/webview');
export const ARTIFACTS = join(ROOT, 'artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const NONCE = 'n0nce4test0000000000000000000000';
// Chromium flags from the shared offline recipe
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage'];

declare global {
  interface Window {
    __posted: FromWebview[];
    __pwned?: unknown;
    __csp: string[];
    __inline?: string;
  }
}

let server: Server;
export let origin = '';
let browser: Browser;
export let page: Page;

function pageHtml(inject: boolean): string {
  let html = chatHtml({ cspSource: origin, nonce: NONCE, scriptUri: `${origin}/chat.js`,
    styleUri: `${origin}/chat.css` });
  if (inject) {
    // what an attacker's markup would look like if it ever reached the document unsanitized
    html = html.replace('</body>', '<script>window.__inline = "no nonce"</script>' +
      '<script nonce="wrong">window.__inline = "wrong nonce"</script>' +
      `<script src="data:text/javascript,window.__inline='data url'"></script></body>`);
  }
  return html;
}

beforeAll(async () => {
  if (!existsSync(join(DIST, 'chat.js'))) throw new Error('dist/webview/chat.js missing: run `node esbuild.mjs`');
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run \`make test\` (installs Debian's chromium)`);
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', origin);
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(pageHtml(url.searchParams.has('inject')));
    } else if (url.pathname === '/chat.js' || url.pathname === '/chat.css') {
      res.writeHead(200, { 'content-type': url.pathname.endsWith('.js') ? 'text/javascript' : 'text/css' });
      res.end(readFileSync(join(DIST, url.pathname.slice(1))));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  mkdirSync(ARTIFACTS, { recursive: true });
});

afterAll(async () => {
  await browser.close();
  await new Promise((resolve) => server.close(resolve));
});

/** A page with the webview's API stood in for: what the script posts lands in __posted. */
export async function newChatPage(): Promise<Page> {
  const fresh = await browser.newPage({ viewport: { width: 420, height: 700 } });
  await fresh.addInitScript(() => {
    window.__posted = [];
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    window.alert = () => { window.__pwned = 'alert'; };
    let state: unknown;
    (window as unknown as { acquireVsCodeApi: () => unknown }).acquireVsCodeApi = () => ({
      postMessage: (m: FromWebview) => window.__posted.push(m),
      getState: () => state,
      setState: (s: unknown) => { state = s; },
    });
  });
  return fresh;
}

export async function open(inject = false): Promise<Page> {
  page = await newChatPage();
  await page.goto(`${origin}/${inject ? '?inject' : ''}`);
  await page.waitForFunction(() => window.__posted.some((m) => m.type === 'ready'));
  return page;
}

export const send = (m: ToWebview) => page.evaluate((msg) => window.postMessage(msg, '*'), m);
export const posted = () => page.evaluate(() => window.__posted);
export const assistantText = () => page.locator('.msg.assistant .body').last().innerText();

