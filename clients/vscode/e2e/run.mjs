// End to end in a real VS Code, as a new user gets it: code-server 1.100 (installed by
// scripts/setup-code-server.sh) with a clean profile, the packaged .vsix and no topicForest.python:
// the extension builds its own server environment from the wheel it carries. The loopback stub
// model plays the LLM; headless Chromium (playwright-core) drives the workbench.
// Case 1: first start, chat, topics, drop/restore/preview, reload, restart, a bad interpreter.
// Case 2: the environment is deleted between two starts: rebuilt, memory intact.
// Issue 15 steps: the Topics welcome, the in-request marks, "What the Model Sees" against the
// budget shown, a new thread, the tree at a 300 px sidebar, and light / dark / High Contrast
// screenshots of the chat and the tree (shown in docs/client.md: copied into docs/img/ only with
// TOPICFOREST_E2E_SCREENSHOTS=docs), an applied code block.
// Screenshots and logs go to artifacts/e2e/.
//
// The harness (processes, the stub, code-server, the helpers openChat, sendMessage, waitReply,
// runCommand, waitFor) is harness.mjs; a scenario of its own may live in a file of its own
// (configureModel.mjs). Steps for another branch's features go next to these with the helpers. A step whose feature is on a branch not merged
// yet runs inside `check(name, branch, fn)` with the branch in AWAITING: its failure is reported
// (and the run goes on); once the branch is merged, remove it from AWAITING and it counts.
//
// env: E2E_HOME (/opt/topicforest-e2e)  TOPICFOREST_PYTHON (../../.venv/bin/python: the stub model)
//      TF_E2E_PORT (default: a free port)  CHROMIUM_PATH (/usr/bin/chromium)
//      PIP_CACHE_DIR (default ~/.cache/pip: the extension's pip, which installs uv, reuses what make venv fetched)
//      TOPICFOREST_E2E_SCREENSHOTS=docs (also write the theme screenshots to docs/img/)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { configureModelScenario } from './configureModel.mjs';
import {
  ART,
  awaited,
  chatView,
  check,
  colours,
  compact,
  dirs,
  DOCS_IMG,
  ENV_DIR,
  ENV_TIMEOUT,
  extLog,
  freePort,
  installVsix,
  log,
  mark,
  openChat,
  openContainer,
  REPO,
  rowLabels,
  RUN,
  runCommand,
  sendMessage,
  setTheme,
  showLogTails,
  sleep,
  startCodeServer,
  startStub,
  stopAll,
  stopProcesses,
  t0,
  timings,
  TO_DOCS,
  topicRowsOf,
  topicsPane,
  waitFor,
  waitReply,
} from './harness.mjs';

// ---------------------------------------------------------------- the conversation
const TURNS = [
  'In src/lexer.py my tokenize() function uses re.match in a loop and it is slow on big inputs. ' +
  'Should I switch to re.finditer with a compiled master pattern and named groups like NUMBER, ' +
  'IDENT and OP? I also want Token(kind, text, line, column) dataclasses and a LexerError that ' +
  'reports the line and column of the bad character.',
  'Next, the CI pipeline: our GitHub Actions workflow in .github/workflows/ci.yml reinstalls all ' +
  'pip dependencies on every run. How do I cache ~/.cache/pip keyed on requirements.txt with ' +
  'actions/cache@v4, and run pytest with pytest-xdist -n auto on a matrix of Python 3.11 and 3.12?',
  'Now the database: in app/models.py the Invoice model uses SQLAlchemy 2.0 with a relationship to ' +
  'LineItem. Queries in reports.py trigger N+1 selects. How do I use selectinload and a composite ' +
  'index on (customer_id, issued_at), and write an Alembic migration for that index?',
  'Back to src/lexer.py: tokenize() must also handle string literals with escapes like \\" and \\n ' +
  'and skip comments starting with #. How do I add STRING and COMMENT to the master pattern without ' +
  'breaking the column numbers in Token?',
  'For the Docker image: the Dockerfile uses python:3.12-slim and pip install takes minutes. How ' +
  'do I use a multi-stage build with a wheels stage, BuildKit cache mounts for /root/.cache/pip, ' +
  'and run as a non-root user with uvicorn app.main:app on port 8000?',
];

// a real file for a function-only block: Apply must replace default_path and keep everything else
const CONFIG_RS = 'use std::fs;\nuse std::path::Path;\n\npub struct Config {\n    pub name: String,\n}\n\n' +
  'impl Config {\n    pub fn load(path: &Path) -> Config {\n        let name = fs::read_to_string(path).unwrap();\n' +
  '        Config { name }\n    }\n}\n\npub fn default_path() -> &\'static str {\n    "config.toml"\n}\n\n' +
  'pub fn version() -> u32 {\n    1\n}\n';

async function main() {
  const tStub = Date.now();
  const apiBase = await startStub();
  mark('stubStarted', tStub);
  log(`stub model at ${apiBase}`);
  fs.writeFileSync(path.join(dirs['work/src'], 'lexer.py'), 'def tokenize(text):\n    ...\n');
  fs.writeFileSync(path.join(dirs['work/src'], 'config.rs'), CONFIG_RS);
  fs.writeFileSync(path.join(dirs['ud/User'], 'settings.json'), JSON.stringify({
    'workbench.startupEditor': 'none', 'workbench.tips.enabled': false, 'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false, 'extensions.autoUpdate': false,
    'extensions.ignoreRecommendations': true, 'update.mode': 'none',
    'security.workspace.trust.enabled': false, 'chat.commandCenter.enabled': false,
    // no topicForest.python and no storePath: the extension's own environment, the default store
    'topicForest.chatModel': 'openai/stub',
    'topicForest.summaryModels': ['openai/stub'], 'topicForest.apiBase': apiBase,
    'topicForest.historyBudget': 1024,
    // the chat's model picker; "slow" waits 10 s before its first byte (stub_llm), to stop before it
    'topicForest.models': ['openai/stub', 'openai/stub-two', 'openai/stub-slow'],
  }, null, 2));
  const tInstall = Date.now();
  installVsix();
  mark('vsixInstalled', tInstall);
  const tCs = Date.now();
  const port = process.env.TF_E2E_PORT ? Number(process.env.TF_E2E_PORT) : await freePort();
  const { url, cs } = await startCodeServer(port);
  mark('codeServerListening', tCs);

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const shot = async (name) => page.screenshot({ path: path.join(ART, `${name}.png`) });
  try {
    const tW = Date.now();
    await page.goto(`${url}?folder=${encodeURIComponent(path.join(RUN, 'work'))}`, { waitUntil: 'domcontentloaded' });
    const activity = page.locator('.part.activitybar [aria-label="Topic Forest"]').first();
    await activity.waitFor({ state: 'visible', timeout: 120_000 });
    mark('workbenchReady', tW);

    // ------------------------------------------------------------ open the container, chat
    const tV = Date.now();
    await activity.click();
    const chat = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
    const input = chat.locator('#input');
    await input.waitFor({ state: 'visible', timeout: 60_000 });
    await chat.locator('#send:enabled').waitFor({ timeout: 60_000 }); // its script is running
    mark('chatViewVisible', tV);
    // first start: the extension builds its environment under a progress notification
    const setup = page.locator('.notifications-toasts .notification-list-item',
      { hasText: 'Topic Forest: setting up the server' });
    await setup.first().waitFor({ timeout: 60_000 });
    log(`progress: ${(await setup.first().innerText()).replace(/\s+/g, ' ').slice(0, 160)}`);
    await shot('00-setting-up');
    const status = page.locator('.statusbar-item', { hasText: /\d(\.\d)?k?\/1k/ });
    await status.first().waitFor({ timeout: ENV_TIMEOUT });   // the server answered listTopics
    mark('envBuiltAndServerAnswered', tV);
    const firstLog = extLog();
    for (const line of ['Topic Forest extension 0.1.0', `private environment ${ENV_DIR}: missing`,
      `python: ${ENV_DIR}/bin/python (bundled)`, 'server: topicforest 0.1.0', 'uv: Installed ', 'private environment ready in ']) {
      if (!firstLog.includes(line)) throw new Error(`the extension log lacks "${line}"`);
    }

    // no topics yet: the Topics view shows its welcome content (a view message used to hide it)
    const welcome = topicsPane(page).locator('.welcome-view-content');
    await welcome.filter({ hasText: 'No topics yet' }).first().waitFor({ timeout: 20_000 });
    // the chat is open beside it: no "Open Chat" (topicForest.chatVisible)
    await welcome.getByRole('button', { name: 'Open Chat' }).waitFor({ state: 'detached', timeout: 20_000 });
    log(`topics welcome: ${(await welcome.first().innerText()).replace(/\s+/g, ' ').slice(0, 120)}`);
    await shot('00b-topics-welcome');
    const inner = () => page.frames().find((f) => f.url().includes('fake.html'));
    const tChat = Date.now();
    for (const [i, text] of TURNS.entries()) {
      const frame = inner();
      if (!frame) throw new Error('chat webview frame not found');
      // record every text length the streaming reply goes through (a real stream shows several)
      await frame.evaluate(() => {
        window.__lengths = [];
        const log = document.getElementById('log');
        new MutationObserver(() => {
          const last = log.querySelector('.msg.assistant.streaming .body');
          if (last) window.__lengths.push(last.textContent.length);
        }).observe(log, { childList: true, subtree: true, characterData: true });
      });
      await sendMessage(page, text);
      const reply = await (await waitReply(page, i + 1)).locator('.body').innerText();
      const lengths = await frame.evaluate(() => window.__lengths);
      const partial = new Set(lengths.filter((n) => n > 0));
      log(`turn ${i + 1}: reply ${reply.length} chars, ${partial.size} partial renders while streaming`);
      if (partial.size < 2) throw new Error(`turn ${i + 1}: reply did not stream (${JSON.stringify(lengths)})`);
      if (!reply.trim()) throw new Error(`turn ${i + 1}: empty reply`);
      if (await chat.locator('.msg.error').count()) throw new Error(`chat error: ${await chat.locator('.msg.error').first().innerText()}`);
      if (i === 0) await shot('01-chat-streamed');
    }
    mark('chatTurns', tChat);
    await shot('02-chat-done');

    // ------------------------------------------------------------ Stop cancels a streaming reply
    const tStop = Date.now();
    await input.fill('One more question about tokenize() in src/lexer.py: how do I test LexerError positions?');
    await input.press('Enter');
    const streaming = chat.locator('.msg.assistant.streaming .body');
    await waitFor('a partial reply', async () => (await streaming.count()) > 0 &&
      (await streaming.first().innerText()).trim().length > 0);
    await chat.locator('#stop').click();
    const stopped = chat.locator('.msg.assistant.cancelled .note', { hasText: 'Stopped' });
    await stopped.first().waitFor({ timeout: 20_000 });
    await chat.locator('#send').waitFor({ state: 'visible', timeout: 5_000 });
    const kept = await chat.locator('.msg.assistant.cancelled .body').last().innerText();
    mark('stop', tStop);
    log(`stopped reply kept ${kept.length} chars`);
    if (!kept.trim()) throw new Error('the stopped reply lost its partial text');
    await shot('02b-stopped');

    // ------------------------------------------------------------ topic tree fills
    const tT = Date.now();
    const topicRows = topicRowsOf(page);
    for (let i = 0; (await topicRows.count()) < 1; i++) {
      if (i > 300) throw new Error('no topics appeared in the tree');
      await sleep(100);
    }
    mark('topicTreeFilled', tT);
    log(`topics: ${(await topicRows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ')).join(' | ')}`);
    await shot('03-topics');
    // every row says whether its topic is in the next request, how, and what it costs there
    await check('topic rows mark what the next request carries', 'chat-server', async () => {
      const rows = (await topicRows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' '));
      const labels = await rowLabels(topicRows);
      const unmarked = rows.filter((t, i) => !/\d+(\.\d)?k? tok( \+msgs| msgs| full| recall)?$|no room$|not sent$|dropped$/.test(t) ||
        !/: (In the next request \(#\d+\): .+, \d+ tokens\.|Not sent: no room|Not in the next request|Dropped:)/.test(labels[i]));
      if (unmarked.length) throw new Error(`rows without an in-request mark: ${unmarked.join(' | ')}`);
    });

    // ------------------------------------------------------------ issue 15: the context view, the tree's width, themes
    // "What the Model Sees" opens renderContext {threadId}; the budget shown and the rows marked
    // as sent must be that render's (the view re-reads itself whenever the tree reloads)
    // (`budgetNeeds`: the branch the budget check needs; a new thread has no recent messages, so
    // there the figure was right before the honest budget too)
    const contextViewMatchesBudget = async (name, budgetNeeds = 'chat-server') => {
      await runCommand(page, 'Topic Forest: What the Model Sees');
      await page.locator('.tabs-container .tab', { hasText: 'What the Model Sees' }).first().waitFor({ timeout: 20_000 });
      const doc = page.locator('.editor-group-container .monaco-editor .view-lines').first();
      // one line: the editor shows spaces as U+00A0 and wraps long lines
      const docText = async () => (await doc.innerText()).replace(/[\s\u00a0]+/g, ' ');
      await waitFor('the render in the context view', async () => /What the model sees/.test(await docText()));
      // (the view re-reads itself when the tree reloads: meanwhile its text may be half there)
      const render = async () => {
        let text = '';
        let m;
        let sent;
        await waitFor('a token total and the topics sent in the context view', async () => {
          text = await docText();
          m = /(\d+) of (\d+) tokens/.exec(text);
          sent = /## Topics sent \((\d+)\)/.exec(text);
          return Boolean(m && sent);
        }, 10_000).catch((error) => { throw new Error(`${error.message}: ${text.slice(0, 300)}`); });
        return { tokens: Number(m[1]), budget: Number(m[2]), sent: Number(sent[1]) };
      };
      log(`what the model sees: ${JSON.stringify(await render())}; status bar "${await statusText()}"`);
      await shot(name);
      await check('the budget shown is the size of the thread\'s next request', budgetNeeds, async () => {
        const agree = async () => {
          const { tokens, budget } = await render();
          const header = await topicsPane(page).locator('.pane-header').innerText();
          return (await statusText()).endsWith(`${compact(tokens)}/${compact(budget)}`) &&
            header.includes(`${compact(tokens)} / ${compact(budget)} tokens`);
        };
        await waitFor('the status bar and the Topics header to show the render\'s tokens', agree, 15_000).catch(async (error) => {
          const header = (await topicsPane(page).locator('.pane-header').innerText()).replace(/\s+/g, ' ');
          throw new Error(`${error.message}: status bar "${await statusText()}", Topics header "${header}", ` +
            `render ${JSON.stringify(await render())}`);
        });
      });
      await check('the rows marked sent are the render\'s topics', 'chat-server', async () => {
        const marked = (await rowLabels(topicRows)).filter((t) => /: In the next request/.test(t)).length;
        const { sent } = await render();
        if (marked !== sent) throw new Error(`${marked} rows marked sent, the render has ${sent} topics`);
      });
    };

    // at a 300 px sidebar every topic row shows its figure whole
    const sidebarAt300px = async () => {
      const sidebar = page.locator('.part.sidebar').first();
      const box = await sidebar.boundingBox();
      const edge = box.x + box.width;
      const sashes = await page.locator('.monaco-sash.vertical').all();
      let sash;
      for (const candidate of sashes) {
        const b = await candidate.boundingBox();
        if (b && b.height > 200 && Math.abs(b.x + b.width / 2 - edge) < 6) sash = b;
      }
      if (!sash) throw new Error('no sash at the sidebar\'s edge');
      await page.mouse.move(sash.x + sash.width / 2, sash.y + sash.height / 2);
      await page.mouse.down();
      await page.mouse.move(box.x + 300, sash.y + sash.height / 2, { steps: 8 });
      await page.mouse.up();
      await page.mouse.move(box.x + 600, 10); // no row hovered: no inline actions
      const width = (await sidebar.boundingBox()).width;
      if (Math.abs(width - 300) > 3) throw new Error(`the sidebar is ${width} px wide, not 300`);
      // each row hovered, so its inline actions (Pin, Drop) take their room too
      const clipped = [];
      for (const row of await topicRows.all()) {
        await row.hover();
        await sleep(150);
        const cut = await row.evaluate((el) => {
          const box = el.querySelector('.monaco-icon-label-container');
          const description = el.querySelector('.label-description');
          return Boolean(box && description && (box.scrollWidth > box.clientWidth + 1 ||
            description.getBoundingClientRect().right > box.getBoundingClientRect().right + 1));
        });
        if (cut) clipped.push((await row.innerText()).replace(/\s+/g, ' '));
      }
      log(`300 px sidebar: ${await topicRows.count()} rows, clipped: ${JSON.stringify(clipped)}`);
      await shot('07c-sidebar-300px');
      if (clipped.length) throw new Error(`rows cut off at 300 px: ${clipped.join(' | ')}`);
    };

    // light, dark and High Contrast screenshots of the chat and the tree (docs/client.md), with a
    // reply that has code spans (the stub quotes the question back)
    const themeScreenshots = async () => {
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
    };

    // the chat's side of issue 15: selection to chat, an @file mention, the model picker
    const chatFeatures = async () => {
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
    };

    // an applied code block: asked to change src/lexer.py, the stub model proposes the block the
    // question carries (stub_llm's documented reply to a fenced block); Apply shows the diff,
    // Accept writes the file, Discard leaves it as it is
    const lexer = path.join(dirs['work/src'], 'lexer.py');
    const proposeAndApply = async (body, choice, file = 'src/lexer.py', fence = `python path=${file}`) => {
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
    };
    const onDisk = () => fs.readFileSync(lexer, 'utf8');
    const applyCodeBlock = async () => {
      const accepted = 'def tokenize(text):\n    """Words, split at whitespace."""\n    return text.split()\n';
      if (onDisk() === accepted) throw new Error('src/lexer.py has the proposed text already');
      await proposeAndApply(accepted, 'Accept');
      await waitFor('src/lexer.py on disk to have the accepted block', async () => onDisk() === accepted, 10_000)
        .catch((error) => { throw new Error(`${error.message}: it has ${JSON.stringify(onDisk())}`); });
      log(`Apply + Accept wrote src/lexer.py: ${JSON.stringify(onDisk())}`);
      await proposeAndApply('def tokenize(text):\n    raise NotImplementedError\n', 'Discard');
      await sleep(1500); // an Accept would have written by now
      if (onDisk() !== accepted) throw new Error(`Discard changed src/lexer.py: ${JSON.stringify(onDisk())}`);
      const dirty = await page.locator('.tabs-container .tab.dirty', { hasText: 'lexer.py' }).count();
      if (dirty) throw new Error('Discard left src/lexer.py edited (unsaved) in its editor');
      log('Apply + Discard left src/lexer.py as it was');
      // a function-only block, named by its first-line comment, into a real file: the rest stays
      const config = path.join(dirs['work/src'], 'config.rs');
      const block = '// src/config.rs\npub fn default_path() -> &\'static str {\n    "settings.toml"\n}\n';
      await proposeAndApply(block, 'Accept', 'src/config.rs', 'rust');
      const merged = CONFIG_RS.replace('"config.toml"', '"settings.toml"');
      await waitFor('src/config.rs to have the merged function and the rest intact',
        async () => fs.readFileSync(config, 'utf8') === merged, 10_000)
        .catch((error) => { throw new Error(`${error.message}: it has ${JSON.stringify(fs.readFileSync(config, 'utf8'))}`); });
      log('Apply of a function-only block replaced default_path in src/config.rs and kept the rest');
    };

    // a second window on the same workspace (its own extension host and server, one store):
    // a message sent in the first appears in the second without a reload, reply included
    const twoWindows = async () => {
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
    };

    // ------------------------------------------------------------ drop, restore, preview
    const row = topicRows.first();
    // found by the whole title its accessible label starts with (the row's label is cut to fit)
    const label = ((await row.getAttribute('aria-label')) ?? '').replace(/: (In the next|Not sent|Not in|Dropped|This server)[\s\S]*$/, '');
    const sameRow = topicsPane(page).locator(`.monaco-list-row[role="treeitem"][aria-label^="${label.replace(/["\\]/g, '\\$&')}: "]`);
    const statusText = async () => (await status.first().innerText()).trim();
    const before = await statusText();
    log(`first topic "${label}", status bar "${before}"`);
    const menu = async (target, item) => {
      await target.click({ button: 'right' });
      const entry = page.getByRole('menuitem', { name: item, exact: true });
      await entry.waitFor({ state: 'visible', timeout: 10_000 });
      await page.waitForTimeout(300);   // menu items ignore clicks for 100 ms after rendering
      await entry.click();
    };

    const tD = Date.now();
    await menu(sameRow.first(), 'Drop');
    await waitFor('the row to show "dropped"', async () => /dropped$/.test(await sameRow.first().innerText()));
    await waitFor('the status bar to change', async () => (await statusText()) !== before);
    const dropped = await statusText();
    mark('drop', tD);
    log(`after drop: status bar "${dropped}"`);
    await shot('04-dropped');

    const tR = Date.now();
    await menu(sameRow.first(), 'Restore');
    await waitFor('the row to lose "dropped"', async () => !/dropped$/.test(await sameRow.first().innerText()));
    await waitFor('the status bar to change back', async () => (await statusText()) !== dropped);
    mark('restore', tR);
    log(`after restore: status bar "${await statusText()}"`);
    await shot('05-restored');

    // clicking the budget in the status bar focuses the topic tree
    await page.locator('.part.editor').first().click({ position: { x: 400, y: 300 } });
    await status.first().click();
    await waitFor('the topic tree to take focus', async () => page.evaluate(() =>
      /Topics/.test(document.activeElement?.closest('.pane')?.querySelector('.pane-header')?.textContent ?? '')), 10_000);

    const tP = Date.now();
    await menu(sameRow.first(), 'Preview');
    // a preview's tab is named by its topic's title (the context view has a name of its own)
    const previewTab = /^(?!What the Model Sees).*\.md/;
    const tab = page.locator('.tabs-container .tab', { hasText: previewTab });
    await tab.first().waitFor({ timeout: 20_000 });
    // rendered by VS Code's Markdown preview: a webview, found by its "Summary" heading
    const previewText = async () => {
      for (const frame of page.frames()) {
        const heading = frame.locator('h2', { hasText: /^Summary$/ });
        if (await heading.count().catch(() => 0)) return frame.locator('body').innerText().catch(() => '');
      }
      return '';
    };
    await waitFor('the rendered preview', async () => /Source messages/.test(await previewText()));
    mark('preview', tP);
    log(`preview tab: ${(await tab.first().innerText()).trim()}`);
    await shot('06-preview');

    // ------------------------------------------------------------ background summary arrives
    // No user action: the server summarizes after a quiet spell and sends topicsChanged; the
    // tree row and the open preview must both pick the summary up. (A summary may retitle its
    // topic, so the row is no longer found by its old label.)
    const tS = Date.now();
    await waitFor('a summary (a row no longer pending)', async () =>
      (await rowLabels(topicRows)).some((t) => !/summary pending/.test(t)), 60_000);
    await waitFor('the open preview to show the summary',
      async () => /Source messages/.test(await previewText()) && !/No summary yet/.test(await previewText()), 20_000);
    mark('summaryArrived', tS);
    log(`after the summary: ${(await topicRows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ')).join(' | ')}`);
    await shot('07-summarized');

    // one topic, one preview tab: with its preview kept open (no longer in preview mode), a
    // click on one of the topic's message rows shows that tab again, no "Topic N.md"
    const first = topicRows.first();
    await menu(first, 'Preview');
    await page.locator('.tabs-container .tab.active', { hasText: previewTab }).first().dblclick(); // keep open
    const keptOpen = (await tab.allInnerTexts()).map((t) => t.trim());
    await first.locator('.monaco-tl-twistie').click();
    const messageRow = topicsPane(page).locator('.monaco-list-row[role="treeitem"][aria-level="2"]').first();
    await messageRow.waitFor({ timeout: 10_000 });
    await messageRow.click();
    await sleep(1500); // a second tab would have opened by now
    const previews = (await tab.allInnerTexts()).map((t) => t.trim());
    log(`preview tabs after a message row's click: ${JSON.stringify(previews)}`);
    if (JSON.stringify(previews) !== JSON.stringify(keptOpen)) {
      throw new Error(`a message row opened another preview tab: ${JSON.stringify(previews)}, before ${JSON.stringify(keptOpen)}`);
    }
    await first.locator('.monaco-tl-twistie').click(); // collapse it again
    await runCommand(page, 'View: Close All Editors'); // the chat is the one webview again
    await contextViewMatchesBudget('07b-what-the-model-sees');
    await sidebarAt300px();
    await themeScreenshots();
    await chatFeatures();
    await applyCodeBlock();
    await twoWindows();

    // ------------------------------------------------------------ reload: history comes back
    // A reload restarts the extension host and the server; the thread id survives in
    // workspaceState and its messages come back from the store via threadHistory.
    const tH = Date.now();
    await page.reload({ waitUntil: 'domcontentloaded' });
    const again = await openChat(page);
    await again.locator('.msg.user', { hasText: 'my tokenize() function uses re.match' }).first()
      .waitFor({ timeout: 60_000 });
    const restored = await again.locator('.msg').count();
    mark('historyAfterReload', tH);
    log(`after reload the chat shows ${restored} messages from the thread history`);
    if (restored < TURNS.length * 2) throw new Error(`expected the whole thread back, got ${restored} messages`);
    await waitFor('the model picker to keep openai/stub-two', async () =>
      (await again.locator('#model').inputValue()) === 'openai/stub-two', 10_000);
    await shot('08-history-after-reload');

    // ------------------------------------------------------------ Restart Server from the palette
    const tRs = Date.now();
    await runCommand(page, 'Topic Forest: Restart Server');
    const quick = page.locator('.quick-input-widget input');
    // the extension's LogOutputChannel file shows the restart and the new server's start
    await waitFor('"restart requested" and a new server start in the log', async () => {
      const text = extLog();
      const at = text.lastIndexOf('restart requested');
      return at >= 0 && text.indexOf('server running', at) > at;
    }, 30_000);
    await waitFor('the budget back in the status bar', async () => (await status.count()) > 0, 30_000);
    await waitFor('topics listed again', async () => (await topicRows.count()) > 0, 30_000);
    mark('restartServer', tRs);
    await shot('09-restarted');

    // ------------------------------------------------------------ an interpreter without the package
    // Point topicForest.python at a bare venv: the extension restarts the server, finds no
    // `topicforest` and says so with the install command and an Install button.
    const tM = Date.now();
    const bare = path.join(RUN, 'bare-venv');
    const venv = spawnSync('python3', ['-m', 'venv', '--without-pip', bare], { encoding: 'utf8' });
    if (venv.status !== 0) throw new Error(`python3 -m venv failed: ${venv.stderr}`);
    // through the Settings editor, as a user would (code-server does not notice a rewritten file)
    await page.keyboard.press('F1');
    await quick.waitFor({ state: 'visible', timeout: 10_000 });
    await quick.fill('>Preferences: Open User Settings');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: /^Preferences: Open User Settings$/ }).first()
      .waitFor({ timeout: 10_000 });
    await page.keyboard.press('Enter');
    const search = page.locator('.settings-editor .settings-header .suggest-input-container');
    await search.waitFor({ state: 'visible', timeout: 20_000 });
    await search.click();
    await page.keyboard.type('topicForest.python');
    // a machine-overridable setting is edited under the Remote tab in a remote window
    await page.locator('.settings-editor .settings-tabs-widget .action-label', { hasText: /^Remote/ }).first().click();
    const pyInput = page.locator('.settings-editor .setting-item-contents', { hasText: 'Python interpreter that runs the server' })
      .locator('input').first();
    await pyInput.waitFor({ state: 'visible', timeout: 20_000 });
    await pyInput.fill(path.join(bare, 'bin/python'));
    await pyInput.press('Tab');
    const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: 'is not installed for' });
    await toast.first().waitFor({ timeout: 30_000 });
    const toastText = (await toast.first().innerText()).replace(/\s+/g, ' ');
    // the install offered is the wheel the .vsix carries, never the name (not on the package index)
    if (!/-m pip install -c \S+constraints\.txt \S+topicforest-0\.1\.0-py3-none-any\.whl/.test(toastText)) {
      throw new Error(`no install command for the bundled wheel in: ${toastText}`);
    }
    if (/pip install topicforest(\s|$)/.test(toastText)) throw new Error(`a bare package name in: ${toastText}`);
    await toast.first().getByRole('button', { name: 'Install in Terminal' }).waitFor({ timeout: 5_000 });
    await page.locator('.notification-toast-container .notification-fade-in-done').first().waitFor({ timeout: 5_000 }).catch(() => undefined);
    await waitFor('the tree to drop the stale topics', async () => (await topicRows.count()) === 0, 10_000);
    await waitFor('the warning in the status bar', async () =>
      (await page.locator('.statusbar-item', { hasText: 'Topic Forest' }).count()) > 0, 10_000);
    mark('missingPackageError', tM);
    log(`missing-package notification: ${toastText.slice(0, 160)}`);
    await shot('10-missing-package');

    // "Set Python Path" opens the setting where it is editable: from the User tab (where a remote
    // window shows "No Settings Found" for it) to the Remote tab, or Workspace in a local window
    const tabs = page.locator('.settings-editor .settings-tabs-widget');
    const checkedTab = () => tabs.locator('.action-label.checked, .action-label[aria-selected="true"]').first().innerText();
    await tabs.locator('.action-label', { hasText: /^User$/ }).first().click();
    await waitFor('the User tab', async () => /^User/.test(await checkedTab()));
    await toast.first().getByRole('button', { name: 'Set Python Path' }).click();
    await waitFor('the Remote or Workspace tab', async () =>
      /^(Remote|Workspace)/.test(await checkedTab()), 10_000);
    await pyInput.waitFor({ state: 'visible', timeout: 10_000 });
    log(`Set Python Path opened the "${(await checkedTab()).trim()}" tab`);
    await shot('10b-set-python-path');

    // ------------------------------------------------------------ clear it: back to the extension's own environment
    const tBack = Date.now();
    await pyInput.fill('');
    await pyInput.press('Tab');
    await waitFor('topics listed again', async () => (await topicRows.count()) > 0, 60_000);
    await waitFor('the budget back in the status bar', async () => (await status.count()) > 0, 60_000);
    mark('recovered', tBack);
    await shot('11-recovered');
    passed++;

    // ============================================================ case 2: the environment deleted between two starts
    // Stop VS Code, delete the private environment, start again: the extension rebuilds it and the
    // memory (topics, the thread) is all there, since it never lived in the environment.
    // topics are compared by their message counts: a summary landing meanwhile may retitle one
    const sizes = async () => (await rowLabels(topicRows)).map((t) => /Source: (\d+) messages?/.exec(t)?.[1]).sort();
    const topicsBefore = await sizes();
    log(`case 2: topics before: ${(await topicRows.allInnerTexts()).map((t) => t.replace(/\s+/g, ' ')).join(' | ')}`);
    const tEnv = Date.now();
    await stopProcesses([cs]);
    if (!fs.existsSync(path.join(ENV_DIR, 'topicforest-env.json'))) throw new Error(`no environment at ${ENV_DIR}`);
    fs.rmSync(ENV_DIR, { recursive: true, force: true });
    // the same port: the workbench keeps workspaceState (the thread id) in the page origin's storage
    const second = await startCodeServer(port);
    await page.goto(`${second.url}?folder=${encodeURIComponent(path.join(RUN, 'work'))}`, { waitUntil: 'domcontentloaded' });
    await activity.waitFor({ state: 'visible', timeout: 120_000 });
    await openContainer(page, activity);
    await setup.first().waitFor({ timeout: 60_000 });
    await shot('12-rebuilding');
    await status.first().waitFor({ timeout: ENV_TIMEOUT });
    mark('envRebuilt', tEnv);
    const rebuiltLog = extLog().split('Topic Forest extension 0.1.0').pop() ?? '';
    if (!rebuiltLog.includes(`private environment ${ENV_DIR}: missing`) || !rebuiltLog.includes('creating ')) {
      throw new Error('the log does not show the environment rebuilt');
    }
    await waitFor('the same topics', async () => JSON.stringify(await sizes()) === JSON.stringify(topicsBefore), 30_000);
    const thread = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
    await thread.locator('.msg.user', { hasText: 'my tokenize() function uses re.match' }).first().waitFor({ timeout: 30_000 });
    const messagesAfter = await thread.locator('.msg').count();
    log(`case 2: rebuilt; ${topicsBefore.length} topics and ${messagesAfter} messages back`);
    if (messagesAfter < TURNS.length * 2) throw new Error(`expected the whole thread back, got ${messagesAfter}`);
    await shot('13-rebuilt-memory-intact');

    // a new thread: the budget, the marks and the context view are the new thread's
    await runCommand(page, 'Topic Forest: New Chat Thread');
    await contextViewMatchesBudget('14-new-thread-what-the-model-sees', undefined);
    // switching threads: the old one from the thread list, its messages and its budget back
    await runCommand(page, 'Topic Forest: Chat Threads…');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'In src/lexer.py my tokenize()' }).first().click();
    await thread.locator('.msg.user', { hasText: 'my tokenize() function uses re.match' }).first().waitFor({ timeout: 20_000 });
    log(`switched back: ${await thread.locator('.msg').count()} messages`);
    await contextViewMatchesBudget('15-switched-thread-what-the-model-sees');
    passed++;

    // ============================================================ Configure Model, its key and its Test
    await configureModelScenario(page, shot);
    passed++;
    timings.total = Date.now() - t0;
    console.log(`TIMINGS_MS ${JSON.stringify(timings)}`);
  } catch (error) {
    await shot('failure').catch(() => undefined);
    throw error;
  } finally {
    await browser.close().catch(() => undefined);
  }
}

let ok = false;
let passed = 0;
try {
  await main();
  ok = true;
} catch (error) {
  console.error('E2E FAILED:', error);
} finally {
  await stopAll();
  const logs = path.join(RUN, 'ud/logs');
  if (fs.existsSync(logs)) fs.cpSync(logs, path.join(ART, 'vscode-logs'), { recursive: true });
  if (!ok) showLogTails();
  for (const { name, branch, error } of awaited) {
    console.log(`awaiting ${branch}: "${name}" ${error ? `fails: ${error}` : 'passes already'}`);
  }
  console.log(`e2e: ${passed} passed, ${ok ? 0 : 1} failed`);
  process.exit(ok ? 0 : 1);
}
