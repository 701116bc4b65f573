// Case 1's steps in the chat (run.mjs): theme screenshots, attachments and the model picker, Apply, a second window.
// Each takes run.mjs's context: { page, browser, url, shot, status, topicRows }.
import fs from 'node:fs';
import path from 'node:path';
import {
  ART, chatView, check, colours, dirs, DOCS_IMG, log, openChat, REPO, RUN, runCommand, sendMessage, setTheme, sleep,
  TO_DOCS, waitFor, waitReply,
} from './harness.mjs';

// a real file for a function-only block: Apply must replace default_path and keep everything else
export const CONFIG_RS = 'use std::fs;\nuse std::path::Path;\n\npub struct Config {\n    pub name: String,\n}\n\n' +
  'impl Config {\n    pub fn load(path: &Path) -> Config {\n        let name = fs::read_to_string(path).unwrap();\n' +
  '        Config { name }\n    }\n}\n\npub fn default_path() -> &\'static str {\n    "config.toml"\n}\n\n' +
  'pub fn version() -> u32 {\n    1\n}\n';

// light, dark and High Contrast screenshots of the chat and the tree (docs/client.md), with a
// reply that has code spans (the stub quotes the question back)
export async function themeScreenshots({ page }) {
  const replies = chatView(page).locator('.msg.assistant:not(.streaming)');
  const before = await replies.count();
  await sendMessage(page, 'Is `re.finditer` with a compiled `MASTER` pattern faster than `re.match` in a loop?');
  await waitReply(page, before + 1);
  for (const [theme, file] of [['Light Modern', 'light'], ['Dark Modern', 'dark'], ['Dark High Contrast', 'hc-dark']]) {
    await setTheme(page, theme);
    const target = path.join(ART, `07d-theme-${file}.png`);
    await page.locator('.part.sidebar').first().screenshot({ path: target });
    if (TO_DOCS) {
      fs.mkdirSync(DOCS_IMG, { recursive: true });
      fs.copyFileSync(target, path.join(DOCS_IMG, `client-${file}.png`));
    }
    log(`screenshot: ${theme} -> ${path.relative(REPO, target)}${TO_DOCS ? ` and docs/img/client-${file}.png` : ''}`);
  }
  await check('a code span in the chat is readable in High Contrast', 'chat-webview', async () => {
    const code = chatView(page).locator('.msg.assistant .body code').last();
    await code.waitFor({ timeout: 5_000 });
    const { fg, bg } = await code.evaluate(colours);
    log(`High Contrast code span: ${fg} on ${bg}`);
    if (fg === bg) throw new Error(`a code span is ${fg} on ${bg}`);
  });
  await setTheme(page, 'Dark Modern');
}

// the chat's side of issue 15: selection to chat, an @file mention, the model picker
export async function chatFeatures({ page, shot }) {
  const chat = chatView(page);
  const replies = chat.locator('.msg.assistant:not(.streaming)');
  // selection to chat: lexer.py selected in its editor, then "Add Selection to Chat"
  await page.keyboard.press('F1'); // the palette without ">" is Go to File
  await page.locator('.quick-input-widget input').fill('lexer.py');
  // the file itself (the open topic preview's name has "lexer.py" in it too)
  const file = page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: /^lexer\.py$/ }) }).first();
  await file.waitFor({ timeout: 10_000 });
  await file.click();
  await page.locator('.tabs-container .tab.active', { hasText: 'lexer.py' }).first().waitFor({ timeout: 10_000 });
  await page.locator('.editor-group-container .monaco-editor .view-lines').first().click();
  await page.keyboard.press('Control+A');
  await runCommand(page, 'Topic Forest: Add Selection to Chat');
  const pending = chat.locator('#chips .chip');
  await pending.filter({ hasText: /^lexer\.py:1-2/ }).first().waitFor({ timeout: 10_000 });
  // an @file mention: "@lex" lists src/lexer.py, Tab takes it
  const input = chat.locator('#input');
  await input.click();
  await input.pressSequentially('@lex');
  await chat.locator('#mentions li', { hasText: 'lexer.py' }).first().waitFor({ timeout: 10_000 });
  await input.press('Tab');
  await waitFor('a second chip', async () => (await pending.count()) === 2);
  let before = await replies.count();
  await input.pressSequentially('What does tokenize return?');
  await input.press('Enter');
  await waitReply(page, before + 1);
  const sentChips = (await chat.locator('.msg.user').last().locator('.chip').allInnerTexts()).map((t) => t.replace(/×/g, '').trim());
  log(`sent with attachments: ${JSON.stringify(sentChips)}`);
  if (!sentChips.some((c) => /^lexer\.py:1-2/.test(c)) || !sentChips.includes('lexer.py')) {
    throw new Error(`the sent message lacks its chips: ${JSON.stringify(sentChips)}`);
  }
  await shot('07e-attachments');
  // the model picker lists chatModel and topicForest.models; the choice is used and kept
  const model = chat.locator('#model');
  await model.selectOption('openai/stub-two');
  before = await replies.count();
  await sendMessage(page, 'And what would the other model say?');
  await waitReply(page, before + 1);
  log(`model picker: ${await model.inputValue()} of ${JSON.stringify(await model.locator('option').allInnerTexts())}`);
  // Escape before the first token: the turn stays, marked, with Retry
  await model.selectOption('openai/stub-slow');
  const stoppedBefore = await chat.locator('.msg.assistant.cancelled').count();
  await sendMessage(page, 'A question stopped before its answer begins');
  await chat.locator('.msg.assistant.streaming').first().waitFor({ timeout: 10_000 });
  await chat.locator('#input').press('Escape');
  const early = chat.locator('.msg.assistant.cancelled').nth(stoppedBefore);
  await early.locator('.note', { hasText: 'Stopped before the reply began.' }).waitFor({ timeout: 20_000 });
  await early.getByRole('button', { name: 'Retry', exact: true }).waitFor({ timeout: 5_000 });
  const asked = await chat.locator('.msg.user').last().innerText();
  if (!asked.includes('A question stopped before its answer begins')) throw new Error(`the stopped question is gone: ${asked}`);
  await shot('07g-stopped-before-first-token');
  log('Escape before the first token kept the turn, marked Stopped, with Retry');
  await model.selectOption('openai/stub-two');
}

// an applied code block: asked to change src/lexer.py, the stub model proposes the block the
// question carries (stub_llm's documented reply to a fenced block); Apply shows the diff,
// Accept writes the file, Discard leaves it as it is
const lexer = path.join(dirs['work/src'], 'lexer.py');
async function proposeAndApply({ page, shot }, body, choice, file = 'src/lexer.py', fence = `python path=${file}`) {
  const chat = chatView(page);
  const before = await chat.locator('.msg.assistant:not(.streaming)').count();
  await sendMessage(page, `Change ${file} like this:\n\n\`\`\`${fence}\n${body}\`\`\``);
  const reply = await waitReply(page, before + 1);
  const block = reply.locator(`.code-block:has(.code-label:text-is("${file}"))`);
  await block.first().waitFor({ timeout: 5_000 });
  await block.first().locator('button.apply').click();
  const diffTab = page.locator('.tabs-container .tab', { hasText: 'proposed by Topic Forest' });
  await diffTab.first().waitFor({ timeout: 20_000 });
  const ask = page.locator('.notifications-toasts .notification-list-item', { hasText: `Apply the proposed change to ${file}?` });
  await ask.first().waitFor({ timeout: 20_000 });
  await shot(`07f-apply-${path.basename(file)}-${choice.toLowerCase()}`);
  await ask.first().getByRole('button', { name: choice, exact: true }).click();
  await ask.first().waitFor({ state: 'detached', timeout: 10_000 });
  // decided: the diff tab closes
  await diffTab.first().waitFor({ state: 'detached', timeout: 10_000 });
}
const onDisk = () => fs.readFileSync(lexer, 'utf8');
export async function applyCodeBlock(ctx) {
  const { page } = ctx;
  const accepted = 'def tokenize(text):\n    """Words, split at whitespace."""\n    return text.split()\n';
  if (onDisk() === accepted) throw new Error('src/lexer.py has the proposed text already');
  await proposeAndApply(ctx, accepted, 'Accept');
  await waitFor('src/lexer.py on disk to have the accepted block', async () => onDisk() === accepted, 10_000)
    .catch((error) => { throw new Error(`${error.message}: it has ${JSON.stringify(onDisk())}`); });
  log(`Apply + Accept wrote src/lexer.py: ${JSON.stringify(onDisk())}`);
  await proposeAndApply(ctx, 'def tokenize(text):\n    raise NotImplementedError\n', 'Discard');
  await sleep(1500); // an Accept would have written by now
  if (onDisk() !== accepted) throw new Error(`Discard changed src/lexer.py: ${JSON.stringify(onDisk())}`);
  const dirty = await page.locator('.tabs-container .tab.dirty', { hasText: 'lexer.py' }).count();
  if (dirty) throw new Error('Discard left src/lexer.py edited (unsaved) in its editor');
  log('Apply + Discard left src/lexer.py as it was');
  // a function-only block, named by its first-line comment, into a real file: the rest stays
  const config = path.join(dirs['work/src'], 'config.rs');
  const block = '// src/config.rs\npub fn default_path() -> &\'static str {\n    "settings.toml"\n}\n';
  await proposeAndApply(ctx, block, 'Accept', 'src/config.rs', 'rust');
  const merged = CONFIG_RS.replace('"config.toml"', '"settings.toml"');
  await waitFor('src/config.rs to have the merged function and the rest intact',
    async () => fs.readFileSync(config, 'utf8') === merged, 10_000)
    .catch((error) => { throw new Error(`${error.message}: it has ${JSON.stringify(fs.readFileSync(config, 'utf8'))}`); });
  log('Apply of a function-only block replaced default_path in src/config.rs and kept the rest');
}

// a second window on the same workspace (its own extension host and server, one store):
// a message sent in the first appears in the second without a reload, reply included
export async function twoWindows({ page, browser, url }) {
  const other = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  try {
    await other.goto(`${url}?folder=${encodeURIComponent(path.join(RUN, 'work'))}`, { waitUntil: 'domcontentloaded' });
    const otherChat = await openChat(other);
    const question = 'Sent in one window, read in the other: what does tokenize return?';
    // the first window's thread, from the thread list (workspaceState is per browser context)
    await otherChat.locator('#send:enabled').waitFor({ timeout: 120_000 });
    await runCommand(other, 'Topic Forest: Chat Threads…');
    await other.locator('.quick-input-list .monaco-list-row', { hasText: 'In src/lexer.py my tokenize()' }).first().click();
    await otherChat.locator('.msg.user', { hasText: 'my tokenize() function uses re.match' }).first().waitFor({ timeout: 60_000 });
    const chat = chatView(page);
    const before = await chat.locator('.msg.assistant:not(.streaming)').count();
    await sendMessage(page, question);
    const reply = await (await waitReply(page, before + 1)).locator('.body').innerText();
    await otherChat.locator('.msg.user', { hasText: question }).first().waitFor({ timeout: 60_000 });
    const last = otherChat.locator('.msg.assistant').last();
    await waitFor('the reply in the second window', async () => (await last.locator('.body').innerText()) === reply, 60_000)
      .catch(async (error) => { throw new Error(`${error.message}: it shows ${JSON.stringify(await otherChat.locator('#log').innerText())}`); });
    await other.screenshot({ path: path.join(ART, '07h-second-window.png') });
    log('a message sent in one window appeared, with its reply, in the other');
  } finally {
    await other.close();
  }
}
