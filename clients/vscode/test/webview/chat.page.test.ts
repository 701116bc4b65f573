// The chat page (dist/webview/chat.js + the real CSP from chatHtml) in headless Chromium.
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { after as afterAll, afterEach, before as beforeAll, beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { chatHtml } from '../../src/chatHtml';
import { eventually } from '../eventually';
import type { FromWebview, ToWebview } from '../../src/chatMessages';

const ROOT = process.cwd(); // tests run from clients/vscode
const DIST = join(ROOT, 'dist/webview');
const ARTIFACTS = join(ROOT, 'artifacts');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const NONCE = 'n0nce4test0000000000000000000000';
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
let origin = '';
let browser: Browser;
let page: Page;

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
async function newChatPage(): Promise<Page> {
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

async function open(inject = false): Promise<Page> {
  page = await newChatPage();
  await page.goto(`${origin}/${inject ? '?inject' : ''}`);
  await page.waitForFunction(() => window.__posted.some((m) => m.type === 'ready'));
  return page;
}

const send = (m: ToWebview) => page.evaluate((msg) => window.postMessage(msg, '*'), m);
const posted = () => page.evaluate(() => window.__posted);
const assistantText = () => page.locator('.msg.assistant .body').last().innerText();

describe('chat webview page', () => {
  beforeEach(async () => {
    await open();
  });
  afterEach(async () => {
    await page.close();
  });

  it('Send is off until the script that sends has loaded (the form would otherwise navigate away)', async () => {
    const early = await newChatPage();
    try {
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => { release = resolve; });
      await early.route('**/chat.js', async (route) => { await held; await route.continue(); });
      await early.goto(`${origin}/`, { waitUntil: 'commit' });
      await early.locator('#send').waitFor();
      expect(await early.locator('#send').isDisabled()).toBe(true);
      release();
      await early.locator('#send:enabled').waitFor({ timeout: 10_000 });
    } finally {
      await early.close();
    }
  });

  it('Enter sends, Shift+Enter makes a new line', async () => {
    const input = page.locator('#input');
    await input.fill('first line');
    await input.press('Shift+Enter');
    await input.pressSequentially('second line');
    expect((await posted()).filter((m) => m.type === 'send')).toEqual([]);
    await input.press('Enter');
    expect((await posted()).filter((m) => m.type === 'send')).toEqual([{ type: 'send', text: 'first line\nsecond line' }]);
    expect(await input.inputValue()).toBe('');
  });

  it('renders a streamed reply incrementally, in index order, then the final markdown', async () => {
    await send({ type: 'turnStart', turnId: 't1', text: 'explain', attachments: [], resend: false });
    await eventually(async () => expect(await (() => page.locator('#stop').isVisible())()).toBe(true));
    expect(await page.locator('#send').isVisible()).toBe(false);
    await send({ type: 'delta', turnId: 't1', index: 0, delta: 'Hello **wor' });
    await eventually(async () => expect(await (assistantText)()).toContain('Hello'));
    const first = await assistantText();
    await send({ type: 'delta', turnId: 't1', index: 2, delta: ' again' }); // early: held back
    await send({ type: 'delta', turnId: 't1', index: 1, delta: 'ld**' });
    await send({ type: 'delta', turnId: 't1', index: 1, delta: 'DUPLICATE' }); // replay: ignored
    await send({ type: 'delta', turnId: 'other', index: 3, delta: 'STRAY' }); // other turn: ignored
    await eventually(async () => expect(await (() => page.locator('.msg.assistant strong').last().textContent().catch(() => null))()).toBe('world'));
    const second = await assistantText();
    expect(second.length).toBeGreaterThan(first.length);
    expect(second).toContain('Hello world again');
    expect(second).not.toMatch(/DUPLICATE|STRAY/);
    await send({ type: 'turnEnd', turnId: 't1', reply: 'Hello **world** again\n\n- a\n- b', cancelled: false });
    await eventually(async () => expect(await (() => page.locator('.msg.assistant li').count())()).toBe(2));
    expect(await page.locator('#send').isVisible()).toBe(true);
    expect(await page.locator('.msg.user .body').innerText()).toBe('explain');
  });

  it('renders markdown with code blocks that have copy buttons', async () => {
    await send({ type: 'turnStart', turnId: 't2', text: 'code?', attachments: [], resend: false });
    await send({ type: 'turnEnd', turnId: 't2', cancelled: false, reply:
      '## Steps\n\nUse `re.finditer`:\n\n```python\nfor m in re.finditer(p, s):\n    print(m)\n```\n\n' +
      '| a | b |\n|---|---|\n| 1 | 2 |\n\nSee [docs](https://docs.python.org/3/library/re.html).' });
    await eventually(async () => expect(await (() => page.locator('.msg.assistant h2').textContent())()).toBe('Steps'));
    expect(await page.locator('.msg.assistant code').first().textContent()).toBe('re.finditer');
    expect(await page.locator('.code-block .code-label').textContent()).toBe('python'); // not a file
    expect(await page.locator('.msg.assistant td').count()).toBe(2);
    await page.locator('.msg.assistant .code-block .code-header button.copy').click();
    expect((await posted()).find((m) => m.type === 'copy')).toEqual({ type: 'copy',
      text: 'for m in re.finditer(p, s):\n    print(m)\n' });
    await page.locator('.msg.assistant a', { hasText: 'docs' }).click();
    expect((await posted()).find((m) => m.type === 'openLink')).toEqual({ type: 'openLink',
      href: 'https://docs.python.org/3/library/re.html' });
    expect(page.url()).toBe(`${origin}/`); // the page never navigated
    await page.screenshot({ path: join(ARTIFACTS, 'webview-chat.png') });
  });

  it('a reply with <script>, onerror= and javascript: links executes nothing', async () => {
    const evil = [
      '<script>window.__pwned = "script"</script>',
      '<img src=x onerror="window.__pwned = \'onerror\'">',
      '<svg onload="window.__pwned = \'svg\'"></svg>',
      '<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>',
      '[click me](javascript:window.__pwned=\'link\')',
      '[data](data:text/html,<script>alert(1)</script>)',
      '<a href="javascript:window.__pwned=\'raw-a\'">raw link</a>',
      '![img](x" onerror="window.__pwned=\'img\')',
      '[vb](vbscript:msgbox(1))',
    ].join('\n\n');
    await send({ type: 'turnStart', turnId: 't3', text: '<img src=x onerror="window.__pwned=\'user\'">', attachments: [], resend: false });
    await send({ type: 'delta', turnId: 't3', index: 0, delta: evil });
    await eventually(async () => expect(await (assistantText)()).toContain('click me'));
    await send({ type: 'turnEnd', turnId: 't3', reply: evil, cancelled: false });
    await send({ type: 'history', threadId: 'h', messages: [{ id: 1, threadId: 'h', role: 'assistant',
      content: evil, timestamp: 0, tokens: 1, cancelled: false, attachments: [] }] });
    for (const link of await page.locator('.log a').all()) await link.click();
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
    const dom = await page.evaluate(() => {
      const log = document.getElementById('log')!;
      return {
        active: log.querySelectorAll('script, iframe, img, svg, object, embed').length,
        onAttrs: Array.from(log.querySelectorAll('*')).flatMap((e) =>
          Array.from(e.attributes).filter((a) => a.name.startsWith('on')).map((a) => a.name)),
        hrefs: Array.from(log.querySelectorAll('a')).map((a) => a.getAttribute('href')),
        text: log.innerText,
      };
    });
    expect(dom.active).toBe(0);
    expect(dom.onAttrs).toEqual([]);
    expect(dom.hrefs.filter((h) => h !== null && !/^https?:/.test(h))).toEqual([]);
    expect(dom.text).toContain('<script>window.__pwned = "script"</script>'); // shown as text
    expect((await posted()).filter((m) => m.type === 'openLink')).toEqual([]);
  });

  it('Stop asks to cancel; a cancelled turn keeps its partial text marked as stopped', async () => {
    await send({ type: 'turnStart', turnId: 't4', text: 'long', attachments: [], resend: false });
    await send({ type: 'delta', turnId: 't4', index: 0, delta: 'partial answer' });
    await page.locator('#stop').click();
    await page.locator('#input').press('Escape');
    expect((await posted()).filter((m) => m.type === 'stop')).toHaveLength(2);
    await send({ type: 'turnEnd', turnId: 't4', reply: 'partial answer', cancelled: true });
    await eventually(async () => expect(await (() => page.locator('.msg.assistant.cancelled .note').textContent())()).toBe('Stopped'));
    expect(await page.locator('#send').isVisible()).toBe(true);
    expect(await page.locator('#stop').isVisible()).toBe(false);
  });

  it('a stop before the first token keeps the turn, marked Stopped, with Retry', async () => {
    await send({ type: 'turnStart', turnId: 't6', text: 'stop me early', attachments: [], resend: false });
    await page.locator('#input').press('Escape');
    expect((await posted()).filter((m) => m.type === 'stop')).toHaveLength(1);
    await send({ type: 'turnEnd', turnId: 't6', reply: '', cancelled: true });
    const stopped = page.locator('.msg.assistant.cancelled');
    await eventually(async () => expect(await stopped.locator('.note').textContent()).toBe('Stopped before the reply began.'));
    expect(await page.locator('.msg.user').last().textContent()).toContain('stop me early');
    await stopped.getByRole('button', { name: 'Retry', exact: true }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'retry' });
  });

  it('shows an error inline with what to do and its action buttons', async () => {
    await send({ type: 'turnStart', turnId: 't5', text: 'hi', attachments: [], resend: false });
    await send({ type: 'error', turnId: 't5', message: 'No chat model configured',
      hint: 'Set "topicForest.chatModel" ...', actions: [{ id: 'openSettings', label: 'Open Settings' }], retry: true });
    await eventually(async () => expect(await (() => page.locator('.msg.error .error-hint').textContent())()).toContain('topicForest.chatModel'));
    expect(await page.locator('.msg.assistant').count()).toBe(0); // the empty reply bubble is gone
    await page.getByRole('button', { name: 'Open Settings' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'action', id: 'openSettings' });
    expect(await page.locator('#send').isVisible()).toBe(true);
  });

  it('shows thread history and starts a new thread on request', async () => {
    await send({ type: 'history', threadId: 'h', messages: [
      { id: 1, threadId: 'h', role: 'user', content: 'earlier **question**', timestamp: 0, tokens: 1, cancelled: false, attachments: [] },
      { id: 2, threadId: 'h', role: 'assistant', content: 'earlier *answer*', timestamp: 1, tokens: 1, cancelled: true, attachments: [] },
    ] });
    await eventually(async () => expect(await (() => page.locator('.msg').count())()).toBe(2));
    expect(await page.locator('.msg.user .body').innerText()).toBe('earlier **question**'); // user text is plain
    expect(await page.locator('.msg.assistant em').textContent()).toBe('answer');
    expect(await page.locator('.msg.assistant .note').textContent()).toBe('Stopped');
    // one + for a new thread: the view's title bar has it (topicForest.newThread), not the page
    expect(await page.getByRole('button', { name: 'New thread' }).count()).toBe(0);
  });
});

const HC_DARK = {
  // Dark High Contrast's values (VS Code 1.100), and the rule VS Code's webview host adds itself
  '--vscode-foreground': '#ffffff', '--vscode-editor-foreground': '#ffffff',
  '--vscode-editor-background': '#000000', '--vscode-sideBar-background': '#000000',
  '--vscode-textPreformat-foreground': '#000000', '--vscode-textPreformat-background': '#ffffff',
  '--vscode-textCodeBlock-background': '#000000', '--vscode-contrastBorder': '#6fc3df',
};

/** Sets theme variables the way the webview host does, plus its default `code` rule. */
async function theme(vars: Record<string, string>): Promise<void> {
  await page.evaluate((v) => {
    for (const [k, value] of Object.entries(v)) document.documentElement.style.setProperty(k, value);
    // (through the CSSOM: the CSP blocks a <style> element) first, as the host's defaults come
    // before the page's own rules
    document.styleSheets[0]!.insertRule('code { color: var(--vscode-textPreformat-foreground); ' +
      'background-color: var(--vscode-textPreformat-background); }', 0);
  }, vars);
}

/** WCAG contrast of an element's text against the first opaque background behind it. */
function contrastOf(selector: string): Promise<number> {
  return page.evaluate((sel) => {
    const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = (c: string) => {
      const [r = 0, g = 0, b = 0] = rgb(c).slice(0, 3).map((x) => {
        const s = x / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const el = document.querySelector(sel)!;
    let bg: Element | null = el;
    let background = 'rgb(0, 0, 0)';
    while (bg) {
      const c = getComputedStyle(bg).backgroundColor;
      const alpha = rgb(c)[3];
      if (c !== 'transparent' && (alpha === undefined || alpha > 0.5)) { background = c; break; }
      bg = bg.parentElement;
    }
    const [a, b] = [lum(getComputedStyle(el).color), lum(background)].sort((x, y) => y - x);
    return (a! + 0.05) / (b! + 0.05);
  }, selector);
}

const CODE_REPLY = 'Change the loop.\n\nIn `src/app.py`:\n\n```python\nfor m in re.finditer(p, s):\n' +
  '    print(m)  # a comment long enough to need the whole width of a narrow sidebar\n```\n\n' +
  '```ts path=web/x.ts\nconst a = 1;\n```\n\nAnd:\n\n```rust\n// src/cli.rs\nfn main() {}\n```\n\n' +
  '```python ../x.py\nx = 1\n```';

describe('chat webview page: code, retry, attachments, keyboard', () => {
  beforeEach(async () => {
    await open();
  });
  afterEach(async () => {
    await page.close();
  });

  it('Dark High Contrast: code spans and blocks are readable (not black on black)', async () => {
    await theme(HC_DARK);
    await send({ type: 'history', threadId: 'h', messages: [{ id: 1, threadId: 'h', role: 'assistant',
      content: 'Call `tokenize()`:\n\n```python\ndef tokenize(s):\n    return s.split()\n```', timestamp: 0,
      tokens: 1, cancelled: false, attachments: [] }] });
    await page.locator('.msg.assistant p code').waitFor();
    expect(await contrastOf('.msg.assistant p code')).toBeGreaterThanOrEqual(4.5);
    expect(await contrastOf('.msg.assistant pre code')).toBeGreaterThanOrEqual(4.5);
    expect(await contrastOf('.msg.assistant pre code .hljs-keyword')).toBeGreaterThanOrEqual(4.5);
    // Send has no background in High Contrast: the theme's contrast border outlines it
    const sendBorder = await page.locator('#send').evaluate((b) => {
      const style = getComputedStyle(b);
      return [style.borderTopStyle, style.borderTopWidth, style.borderTopColor];
    });
    expect(sendBorder).toEqual(['solid', '1px', 'rgb(111, 195, 223)']);
    await page.screenshot({ path: join(ARTIFACTS, 'webview-chat-hc.png') });
  });

  it('code blocks: highlighted, a header bar (not over the code) with Copy / Insert / Apply, at 300 px', async () => {
    await page.setViewportSize({ width: 300, height: 700 });
    await send({ type: 'turnStart', turnId: 'c1', text: 'fix it', attachments: [], resend: false });
    await send({ type: 'turnEnd', turnId: 'c1', reply: CODE_REPLY, cancelled: false });
    const block = page.locator('.msg.assistant .code-block').first();
    await block.waitFor();
    expect(await block.locator('.hljs-keyword').count()).toBeGreaterThan(0);
    expect(await block.locator('.code-label').textContent()).toBe('src/app.py');
    const pre = await block.locator('pre').boundingBox();
    for (const name of ['Copy', 'Insert', 'Apply']) {
      const b = await block.getByRole('button', { name, exact: true }).boundingBox();
      expect(b).not.toBeNull();
      expect(b!.y + b!.height).toBeLessThanOrEqual(pre!.y + 0.5); // above the code, never on it
      expect(b!.x + b!.width).toBeLessThanOrEqual(300);
    }
    await block.getByRole('button', { name: 'Insert', exact: true }).click();
    await block.getByRole('button', { name: 'Apply', exact: true }).click();
    const code = 'for m in re.finditer(p, s):\n    print(m)  # a comment long enough to need the whole width of a narrow sidebar\n';
    const sent = await posted();
    expect(sent.find((m) => m.type === 'insert')).toEqual({ type: 'insert', code });
    expect(sent.find((m) => m.type === 'apply')).toEqual({ type: 'apply', code, path: 'src/app.py' });
    await page.locator('.code-block').nth(1).getByRole('button', { name: 'Apply', exact: true }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'apply', code: 'const a = 1;\n', path: 'web/x.ts' });
    // a first-line comment names the file; a refused path is still named (the extension refuses it)
    await page.locator('.code-block').nth(2).getByRole('button', { name: 'Apply', exact: true }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'apply', code: '// src/cli.rs\nfn main() {}\n', path: 'src/cli.rs' });
    await page.locator('.code-block').nth(3).getByRole('button', { name: 'Apply', exact: true }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'apply', code: 'x = 1\n', path: '../x.py' });
    expect(await page.locator('.code-block').nth(3).locator('.code-label').textContent()).toBe('../x.py');
    await page.screenshot({ path: join(ARTIFACTS, 'webview-chat-300px.png') });
  });

  it('per message Copy; Retry on the last reply only', async () => {
    await send({ type: 'history', threadId: 'h', messages: [
      { id: 1, threadId: 'h', role: 'user', content: 'first', timestamp: 0, tokens: 1, cancelled: false, attachments: [] },
      { id: 2, threadId: 'h', role: 'assistant', content: 'one **bold**', timestamp: 1, tokens: 1, cancelled: false, attachments: [] },
      { id: 3, threadId: 'h', role: 'user', content: 'second', timestamp: 2, tokens: 1, cancelled: false, attachments: [] },
      { id: 4, threadId: 'h', role: 'assistant', content: 'two', timestamp: 3, tokens: 1, cancelled: false, attachments: [] },
    ] });
    await eventually(async () => expect(await page.locator('.msg').count()).toBe(4));
    expect(await page.locator('.msg .retry').count()).toBe(1);
    expect(await page.locator('.msg.assistant').last().locator('.retry').count()).toBe(1);
    await page.locator('.msg.assistant').first().getByRole('button', { name: 'Copy' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'copy', text: 'one **bold**' });
    await page.locator('.msg.assistant').last().getByRole('button', { name: 'Retry' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'retry' });
    // the retried turn replaces the old reply under the same question
    await send({ type: 'turnStart', turnId: 'r', text: 'second', attachments: [], resend: true });
    await send({ type: 'turnEnd', turnId: 'r', reply: 'two, again', cancelled: false });
    await eventually(async () => expect(await assistantText()).toBe('two, again'));
    expect(await page.locator('.msg.user').count()).toBe(2);
    expect(await page.locator('.msg.assistant').count()).toBe(2);
  });

  it('a reply the server died under stays, marked interrupted, with Retry', async () => {
    await send({ type: 'turnStart', turnId: 'i1', text: 'long question', attachments: [], resend: false });
    await send({ type: 'delta', turnId: 'i1', index: 0, delta: 'The first half' });
    await send({ type: 'interrupted', turnId: 'i1', text: 'long question', partial: 'The first half',
      attachments: [], reason: 'Interrupted: the server stopped before the reply was complete.' });
    await eventually(async () => expect(await page.locator('.msg.assistant.interrupted .note').textContent()).toContain('Interrupted'));
    expect(await assistantText()).toContain('The first half');
    expect(await page.locator('#send').isVisible()).toBe(true);
    await page.locator('.msg.interrupted').getByRole('button', { name: 'Retry' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'retry' });
    // a fresh page: history (the question only), then the interrupted reply again
    await send({ type: 'history', threadId: 'h', messages: [{ id: 1, threadId: 'h', role: 'user',
      content: 'long question', timestamp: 0, tokens: 1, cancelled: false, attachments: [] }] });
    await send({ type: 'interrupted', text: 'long question', partial: 'The first half', attachments: [],
      reason: 'Interrupted: the server stopped before the reply was complete.' });
    await eventually(async () => expect(await page.locator('.msg.interrupted').count()).toBe(1));
    expect(await page.locator('.msg.user').count()).toBe(1);
  });

  it('a message kept while the server is down shows why, then goes out in place', async () => {
    await send({ type: 'queued', text: 'are you there?', attachments: [{ kind: 'file', path: 'src/app.py' }],
      reason: 'Not sent yet: Topic Forest: no Python 3.11+ found. It will be sent when the server is back.',
      actions: [{ id: 'restartServer', label: 'Restart Server' }, { id: 'showLog', label: 'Show Log' }] });
    const queued = page.locator('.msg.user.queued');
    await queued.waitFor();
    expect(await queued.locator('.queued-note').textContent()).toContain('no Python 3.11+ found');
    expect(await queued.locator('.chip').textContent()).toBe('app.py');
    await queued.getByRole('button', { name: 'Restart Server' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'action', id: 'restartServer' });
    await send({ type: 'turnStart', turnId: 'q1', text: 'are you there?', attachments: [], resend: true });
    await send({ type: 'turnEnd', turnId: 'q1', reply: 'yes', cancelled: false });
    await eventually(async () => expect(await assistantText()).toBe('yes'));
    expect(await page.locator('.msg.user').count()).toBe(1);
    expect(await page.locator('.queued-note').count()).toBe(0);
  });

  it('the no-model advice shows once, as markdown (no raw backticks), with Configure Model', async () => {
    await send({ type: 'turnStart', turnId: 'm1', text: 'hi', attachments: [], resend: false });
    await send({ type: 'error', turnId: 'm1', hint: '', retry: true,
      message: 'No chat model is configured. Set `topicForest.chatModel` to a litellm model string.',
      actions: [{ id: 'configureModel', label: 'Configure Model' }] });
    const error = page.locator('.msg.error');
    await error.waitFor();
    const text = await error.innerText();
    expect(text.match(/Set topicForest\.chatModel/g)).toHaveLength(1);
    expect(text).not.toContain('`');
    expect(await error.locator('code').textContent()).toBe('topicForest.chatModel');
    expect(await error.locator('.error-hint').count()).toBe(0);
    await error.getByRole('button', { name: 'Configure Model' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'action', id: 'configureModel' });
  });

  it('@ completes files, @selection, @problems; picks become removable chips; sent messages show theirs', async () => {
    const input = page.locator('#input');
    await input.fill('');
    await input.pressSequentially('look at @ap');
    await eventually(async () => expect((await posted()).filter((m) => m.type === 'mention').at(-1)).toMatchObject({ query: 'ap' }));
    const request = (await posted()).filter((m) => m.type === 'mention').at(-1) as { requestId: number };
    await send({ type: 'mentions', requestId: request.requestId, items: [
      { kind: 'file', path: 'src/app.py' }, { kind: 'file', path: 'lib/apply.py' }] });
    await page.locator('#mentions li').first().waitFor();
    expect(await page.locator('#mentions').isVisible()).toBe(true);
    await input.press('ArrowDown');
    await input.press('Enter');
    expect((await posted()).at(-1)).toEqual({ type: 'attach', item: { kind: 'file', path: 'lib/apply.py' } });
    expect(await input.inputValue()).toBe('look at ');
    expect(await page.locator('#mentions').isVisible()).toBe(false);
    expect((await posted()).filter((m) => m.type === 'send')).toEqual([]); // Enter picked, did not send
    await send({ type: 'pending', attachments: [{ id: 'c1', kind: 'file', path: 'lib/apply.py' },
      { id: 'c2', kind: 'selection', path: 'src/app.py', range: { startLine: 9, endLine: 41 } }] });
    await eventually(async () => expect(await page.locator('#chips .chip').allTextContents()).toEqual(['apply.py×', 'app.py:10-42×']));
    await page.getByRole('button', { name: 'Remove app.py:10-42' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'detach', id: 'c2' });
    await send({ type: 'history', threadId: 'h', messages: [{ id: 1, threadId: 'h', role: 'user', content: 'see this',
      timestamp: 0, tokens: 1, cancelled: false, attachments: [{ kind: 'selection', path: 'src/app.py',
        range: { startLine: 0, endLine: 4 }, language: 'python', sha256: 'ab', tokens: 20, truncated: true }] }] });
    await eventually(async () => expect(await page.locator('.msg.user .chip').textContent()).toBe('app.py:1-5 (truncated)'));
  });

  it('keyboard: the log is focusable and announced; Escape stops from anywhere; focus goes to the input', async () => {
    const log = page.locator('#log');
    expect(await log.getAttribute('role')).toBe('log');
    expect(await log.getAttribute('aria-live')).toBe('polite');
    expect(await log.getAttribute('tabindex')).toBe('0');
    await send({ type: 'turnStart', turnId: 'k1', text: 'q', attachments: [], resend: false });
    await page.locator('#stop').waitFor();
    await log.focus();
    await page.keyboard.press('Escape');
    expect((await posted()).filter((m) => m.type === 'stop')).toHaveLength(1);
    await send({ type: 'focusInput' });
    await eventually(async () => expect(await page.evaluate(() => document.activeElement?.id)).toBe('input'));
  });

  it('header: thread list, model picker; an empty chat explains and offers the missing steps', async () => {
    const welcome = page.locator('#welcome');
    expect(await welcome.isVisible()).toBe(true);
    expect(await welcome.locator('p:not(.setup-step)').count()).toBe(3);
    await send({ type: 'setup', server: 'starting', reason: null, model: false });
    await eventually(async () => expect(await welcome.locator('.setup-step').allInnerTexts()).toEqual(
      ['Starting the server…'])); // not also "No chat model is set" while it starts
    await send({ type: 'setup', server: 'failed', reason: 'no Python 3.11+ found', model: false });
    await eventually(async () => expect(await welcome.locator('.setup-step').count()).toBe(2));
    expect(await welcome.innerText()).toContain('no Python 3.11+ found');
    await welcome.getByRole('button', { name: 'Show Log' }).click();
    await welcome.getByRole('button', { name: 'Configure Model' }).click();
    expect((await posted()).slice(-2)).toEqual([{ type: 'action', id: 'showLog' }, { type: 'action', id: 'configureModel' }]);
    await send({ type: 'setup', server: 'running', reason: null, model: true });
    await eventually(async () => expect(await welcome.locator('.setup-step').count()).toBe(0));
    await send({ type: 'header', title: 'Parser bug <b>x</b>', models: ['openai/stub', 'ollama/llama3'], model: 'openai/stub' });
    await eventually(async () => expect(await page.locator('#thread-title').textContent()).toBe('Parser bug <b>x</b>'));
    await page.locator('#model').selectOption('ollama/llama3');
    expect((await posted()).at(-1)).toEqual({ type: 'pickModel', model: 'ollama/llama3' });
    // at 300 px the picker shows a model's name and the title keeps room of its own
    await page.setViewportSize({ width: 300, height: 700 });
    await send({ type: 'header', title: 'A long thread title about the parser and its error positions',
      models: ['openai/qwen2.5-coder', 'ollama/llama3'], model: 'openai/qwen2.5-coder' });
    await eventually(async () => expect(await page.locator('#model').inputValue()).toBe('openai/qwen2.5-coder'));
    const [picker, title] = await Promise.all([page.locator('#model').boundingBox(), page.locator('#threads').boundingBox()]);
    expect(picker!.width).toBeGreaterThanOrEqual(110);
    expect(title!.width).toBeGreaterThanOrEqual(80);
    expect(picker!.x + picker!.width).toBeLessThanOrEqual(300);
    await page.getByRole('button', { name: 'Threads' }).click();
    expect((await posted()).at(-1)).toEqual({ type: 'threads' });
    await send({ type: 'turnStart', turnId: 'w', text: 'hello', attachments: [], resend: false });
    await eventually(async () => expect(await welcome.isVisible()).toBe(false));
  });
});

describe('chat webview CSP', () => {
  it('blocks inline scripts without the nonce while the nonce\'d bundle runs', async () => {
    await open(true);
    expect(await page.evaluate(() => window.__inline)).toBeUndefined();
    const violations = await page.evaluate(() => window.__csp);
    expect(violations.filter((v) => v.startsWith('script-src')).length).toBeGreaterThanOrEqual(3);
    expect((await posted())[0]).toEqual({ type: 'ready' }); // our script did run
    const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
    expect(csp).toContain(`script-src 'nonce-${NONCE}'`);
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    await page.close();
  });
});
