// The chat page in headless Chromium: code blocks, retry, attachments, keyboard, header.
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { eventually } from '../eventually';
import { ARTIFACTS, assistantText, open, page, posted, send } from './page';

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
    // once read, each pending chip shows its estimated cost (outside the history budget)
    await send({ type: 'pending', attachments: [{ id: 'c1', kind: 'file', path: 'lib/apply.py', tokens: 1234 },
      { id: 'c2', kind: 'selection', path: 'src/app.py', range: { startLine: 9, endLine: 41 }, tokens: 80 }] });
    await eventually(async () => expect(await page.locator('#chips .chip').allTextContents())
      .toEqual(['apply.py · ~1.2k tok×', 'app.py:10-42 · ~80 tok×']));
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

