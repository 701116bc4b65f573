// The chat page in headless Chromium: sending, streaming, markdown safety, errors, threads, CSP.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { eventually } from '../eventually';
import { ARTIFACTS, assistantText, NONCE, newChatPage, open, origin, page, posted, send } from './page';

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
