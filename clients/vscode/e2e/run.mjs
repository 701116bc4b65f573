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
// The harness (processes, the stub, code-server, Chromium, the helpers openChat, sendMessage,
// waitReply, runCommand, waitFor) is harness.mjs. Case 1's steps on the Topics view are in
// topicsSteps.mjs, its steps in the chat in chatSteps.mjs, its bad interpreter in
// missingPackage.mjs; Configure Model is configureModel.mjs. Steps for another branch's features
// go next to these with the helpers. A step whose feature is on a branch not merged
// yet runs inside `check(name, branch, fn)` with the branch in AWAITING: its failure is reported
// (and the run goes on); once the branch is merged, remove it from AWAITING and it counts.
//
// env: E2E_HOME (/opt/topicforest-e2e)  TOPICFOREST_PYTHON (../../.venv/bin/python: the stub model)
//      TF_E2E_PORT (default: a free port)  CHROMIUM_PATH (/usr/bin/chromium)
//      PIP_CACHE_DIR (default ~/.cache/pip: the extension's pip, which installs uv, reuses what make venv fetched)
//      TOPICFOREST_E2E_SCREENSHOTS=docs (also write the theme screenshots to docs/img/)
import fs from 'node:fs';
import path from 'node:path';
import { applyCodeBlock, chatFeatures, CONFIG_RS, themeScreenshots, twoWindows } from './chatSteps.mjs';
import { configureModelScenario } from './configureModel.mjs';
import {
  ART,
  awaited,
  check,
  dirs,
  ENV_DIR,
  ENV_TIMEOUT,
  extLog,
  freePort,
  installVsix,
  launchChromium,
  log,
  mark,
  openChat,
  openContainer,
  rowLabels,
  RUN,
  runCommand,
  sendMessage,
  showLogTails,
  sleep,
  startCodeServer,
  startStub,
  stopAll,
  stopProcesses,
  t0,
  timings,
  topicRowsOf,
  topicsPane,
  waitFor,
  waitReply,
} from './harness.mjs';
import { missingPackageScenario } from './missingPackage.mjs';
import { contextViewMatchesBudget, dropRestorePreview, sidebarAt300px } from './topicsSteps.mjs';

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

  const browser = await launchChromium();
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

    // what the step modules work with
    const ctx = { page, browser, url, shot, status, topicRows };

    // ------------------------------------------------------------ drop, restore, preview, the background summary
    await dropRestorePreview(ctx);
    await runCommand(page, 'View: Close All Editors'); // the chat is the one webview again
    await contextViewMatchesBudget(ctx, '07b-what-the-model-sees');
    await sidebarAt300px(ctx);
    await themeScreenshots(ctx);
    await chatFeatures(ctx);
    await applyCodeBlock(ctx);
    await twoWindows(ctx);

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

    // ------------------------------------------------------------ an interpreter without the package, and back
    await missingPackageScenario(ctx);
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
    await contextViewMatchesBudget(ctx, '14-new-thread-what-the-model-sees', undefined);
    // switching threads: the old one from the thread list, its messages and its budget back
    await runCommand(page, 'Topic Forest: Chat Threads…');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'In src/lexer.py my tokenize()' }).first().click();
    await thread.locator('.msg.user', { hasText: 'my tokenize() function uses re.match' }).first().waitFor({ timeout: 20_000 });
    log(`switched back: ${await thread.locator('.msg').count()} messages`);
    await contextViewMatchesBudget(ctx, '15-switched-thread-what-the-model-sees');
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
