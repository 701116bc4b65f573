// The e2e harness: the run's directories, the processes it starts (by PID), the loopback stub
// model, code-server, Chromium, and the helpers the scenarios drive the workbench with (run.mjs).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { chromium } from 'playwright-core';

export const CLIENT = process.cwd();
export const REPO = path.resolve(CLIENT, '../..');
export const E2E_HOME = process.env.E2E_HOME ?? '/opt/topicforest-e2e';
export const ENTRY = path.join(E2E_HOME, 'node_modules/code-server/out/node/entry.js');
export const PYTHON = process.env.TOPICFOREST_PYTHON ?? path.join(REPO, '.venv/bin/python');
export const VSIX = path.join(CLIENT, 'topic-forest.vsix');
export const ART = path.join(CLIENT, 'artifacts/e2e');
export const RUN = path.join(E2E_HOME, 'run');          // per-run state: user data, extensions, workspace
export const STUB_KEY = 'sk-stub-not-a-secret';           // the stub ignores it; litellm wants one set
export const ENV_TIMEOUT = 420_000;   // building the environment: ~40 s from pip's cache, minutes without
export const DOCS_IMG = path.join(REPO, 'docs/img');
// the theme screenshots go into docs/img/ (the ones docs/client.md shows) only when asked
export const SCREENSHOTS = process.env.TOPICFOREST_E2E_SCREENSHOTS ?? '';
if (!['', 'docs'].includes(SCREENSHOTS)) {
  console.error(`e2e: TOPICFOREST_E2E_SCREENSHOTS is "${SCREENSHOTS}"; unset, or "docs" to update docs/img/`);
  process.exit(1);
}
export const TO_DOCS = SCREENSHOTS === 'docs';
// Branches whose features some checks below need, not merged yet (see `check`).
export const AWAITING = new Set([]);
export const t0 = Date.now();
export const timings = {};
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const log = (msg) => console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);
export const mark = (name, since) => { timings[name] = Date.now() - since; log(`${name}: ${timings[name]} ms`); };

for (const [what, p] of [['code-server', ENTRY], ['python', PYTHON], ['vsix', VSIX]]) {
  if (!fs.existsSync(p)) { console.error(`e2e: ${what} missing at ${p} (run make e2e)`); process.exit(1); }
}
fs.rmSync(ART, { recursive: true, force: true });
fs.rmSync(RUN, { recursive: true, force: true });
export const dirs = Object.fromEntries(['ud/User', 'exts', 'work/src', 'tmp', 'xdg/config',
  'xdg/data', 'xdg/cache'].map((d) => [d, path.join(RUN, d)]));
for (const d of [ART, ...Object.values(dirs)]) fs.mkdirSync(d, { recursive: true });

// ---------------------------------------------------------------- processes we start (by PID)
export const started = [];
export function descendants(pid) {
  let kids = [];
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      kids.push(...fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/)
        .filter(Boolean).map(Number));
    }
  } catch { /* gone */ }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}
export const alive = (pid) => {
  try { process.kill(pid, 0); return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '); } catch { return false; }
};
export async function stopProcesses(procs) {
  const pids = procs.flatMap((p) => [p.pid, ...descendants(p.pid)]).filter(Boolean);
  for (const pid of pids) if (alive(pid)) { try { process.kill(pid, 'SIGTERM'); } catch { /* gone */ } }
  for (let i = 0; i < 40 && pids.some(alive); i++) await sleep(100);
  for (const pid of pids) if (alive(pid)) { log(`SIGKILL ${pid}`); try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
}
export const stopAll = () => stopProcesses(started);

export const freePort = () => new Promise((resolve) => {
  const srv = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = srv.address(); srv.close(() => resolve(port));
  });
});

// ---------------------------------------------------------------- stub model
export async function startStub(extra = [], name = 'stub') {
  const stub = spawn(PYTHON, ['-m', 'topicforest.testing.stub_llm', '--port', '0',
    '--chunks', '8', '--chunk-latency', '0.2', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(stub);
  stub.stderr.pipe(fs.createWriteStream(path.join(ART, `${name}.log`)));
  const first = await new Promise((resolve, reject) => {
    readline.createInterface({ input: stub.stdout }).once('line', resolve);
    stub.once('exit', (code) => reject(new Error(`stub exited ${code}`)));
    setTimeout(() => reject(new Error('stub did not print its URL')), 20_000);
  });
  return first.trim();
}

// ---------------------------------------------------------------- code-server
export const csEnv = {
  ...process.env, OPENAI_API_KEY: STUB_KEY, VSCODE_CLI: '1', TMPDIR: dirs.tmp,
  TOPICFOREST_SETTLE_SECONDS: '2', // summaries settle after 2 s of quiet, not a minute
  XDG_CONFIG_HOME: dirs['xdg/config'], XDG_DATA_HOME: dirs['xdg/data'], XDG_CACHE_HOME: dirs['xdg/cache'],
  // XDG_CACHE_HOME above would hide pip's cache: keep the machine's, so a rerun installs from it
  PIP_CACHE_DIR: process.env.PIP_CACHE_DIR ?? path.join(process.env.HOME ?? '/root', '.cache/pip'),
};
// where VS Code keeps the extension's global storage, and so its private environment
export const ENV_DIR = path.join(RUN, 'ud/User/globalStorage/topicforest.topic-forest/env');

// the extension's LogOutputChannel files, every session so far
export function extLog() {
  const found = [];
  const walk = (d) => {
    if (!fs.existsSync(d)) return;
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else if (e.name === 'Topic Forest.log') found.push(fs.readFileSync(p, 'utf8'));
    }
  };
  walk(path.join(RUN, 'ud/logs'));
  return found.join('\n');
}
export const csConfig = path.join(RUN, 'cs-config.yaml');
fs.writeFileSync(csConfig, '');
export const csArgs = ['--config', csConfig, '--user-data-dir', path.join(RUN, 'ud'), '--extensions-dir', dirs.exts];

export function installVsix() {
  const r = spawnSync(process.execPath, [ENTRY, ...csArgs, '--install-extension', VSIX, '--force'],
    { env: csEnv, encoding: 'utf8' });
  fs.writeFileSync(path.join(ART, 'install.log'), `${r.stdout}\n${r.stderr}`);
  if (r.status !== 0 || !/successfully installed/i.test(r.stdout)) throw new Error(`vsix install failed: ${r.stdout} ${r.stderr}`);
}

export async function startCodeServer(port) {
  const out = fs.openSync(path.join(ART, 'code-server.log'), 'w');
  const cs = spawn(process.execPath, [ENTRY, ...csArgs, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`,
    '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
    '--disable-getting-started-override', dirs['work/src'].replace(/\/src$/, '')],
  { stdio: ['ignore', out, out], env: csEnv });
  started.push(cs);
  const url = `http://127.0.0.1:${port}/`;
  for (let i = 0; ; i++) {
    try { if ((await fetch(`${url}healthz`)).ok) break; } catch { /* not yet */ }
    if (cs.exitCode !== null || i > 600) throw new Error('code-server did not start (artifacts/e2e/code-server.log)');
    await sleep(100);
  }
  return { url, cs };
}

/** Headless Chromium (CHROMIUM_PATH, or Debian's /usr/bin/chromium) for the workbench pages. */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--disable-dev-shm-usage'],
  });
}

// VS Code may restore the container open a moment after a (re)load; clicking the icon then
// would close it again. Give the restore a chance, and click only if the container is shut.
export async function openContainer(page, activity) {
  const input = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame').locator('#input');
  await input.waitFor({ timeout: 15_000 }).catch(() => undefined);
  const open = await activity.evaluate((e) => e.closest('.action-item')?.classList.contains('checked') ?? false);
  if (!(await input.isVisible().catch(() => false)) && !open) await activity.click();
}

// ---------------------------------------------------------------- helpers for the steps
export const awaited = []; // checks whose branch is not merged yet: { name, branch, error? }

/** Runs one check. For a feature on a branch in AWAITING a failure is reported, not fatal. */
export async function check(name, branch, fn) {
  if (!branch || !AWAITING.has(branch)) return fn();
  try {
    await fn();
    awaited.push({ name, branch });
    log(`check "${name}" (needs ${branch}) passes already: take ${branch} out of AWAITING`);
  } catch (error) {
    awaited.push({ name, branch, error: error.message });
    log(`check "${name}" fails until ${branch} is merged: ${error.message}`);
  }
}

export async function waitFor(what, test, timeout = 20_000) {
  const end = Date.now() + timeout;
  while (!(await test())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The chat view's page (inside VS Code's webview iframes). */
export const chatView = (page) => page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');

/** Opens the Topic Forest container (the chat view and the Topics view) and waits for the input. */
export async function openChat(page) {
  const activity = page.locator('.part.activitybar [aria-label="Topic Forest"]').first();
  await activity.waitFor({ state: 'visible', timeout: 120_000 });
  await openContainer(page, activity);
  await chatView(page).locator('#input').waitFor({ state: 'visible', timeout: 60_000 });
  return chatView(page);
}

/** Types a message into the chat and sends it. */
export async function sendMessage(page, text) {
  const input = chatView(page).locator('#input');
  await input.fill(text);
  await input.press('Enter');
}

/** Waits until the chat shows `count` finished replies (or an error) and returns the last one. */
export async function waitReply(page, count, timeout = 60_000) {
  const chat = chatView(page);
  const replies = chat.locator('.msg.assistant:not(.streaming)');
  const errors = chat.locator('.msg.error');
  try {
    await waitFor(`reply ${count}`, async () => (await replies.count()) >= count || (await errors.count()) > 0, timeout);
  } catch (error) {
    throw new Error(`${error.message}; the chat view shows: ${JSON.stringify(await chat.locator('#log').innerText())}`);
  }
  if (await errors.count()) throw new Error(`chat error: ${await errors.first().innerText()}`);
  return replies.nth(count - 1);
}

/** Runs a command from the palette by its title ("Topic Forest: Restart Server"). */
export async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const quick = page.locator('.quick-input-widget input');
  await quick.waitFor({ state: 'visible', timeout: 10_000 });
  await quick.fill(`>${title}`);
  const exact = new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const row = page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: exact }) }).first();
  await row.waitFor({ timeout: 10_000 });
  await row.click();
}

/** The Topics view, its top-level rows, and what each row tells a screen reader. */
export const topicsPane = (page) => page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^\s*Topics/ }) });
export const topicRowsOf = (page) => topicsPane(page).locator('.monaco-list-row[role="treeitem"][aria-level="1"]');
export const rowLabels = async (rows) => Promise.all((await rows.all()).map(async (r) => (await r.getAttribute('aria-label')) ?? ''));

/** compactTokens of src/format.ts: how the status bar and the Topics header show a count. */
export function compact(n) {
  if (n < 1000) return String(n);
  const k = n / 1000;
  return `${k < 10 ? k.toFixed(1).replace(/\.0$/, '') : Math.round(k)}k`;
}

/** Picks a color theme by name from "Preferences: Color Theme". */
export async function setTheme(page, name) {
  await runCommand(page, 'Preferences: Color Theme');
  await page.keyboard.type(name);
  const row = page.locator('.quick-input-list .monaco-list-row', { has: page.locator('.label-name', { hasText: new RegExp(`^${name}$`) }) }).first();
  await row.waitFor({ timeout: 10_000 });
  await row.click();
  await sleep(800); // the workbench and the webviews repaint
}

/** The colour of an element's text and of what is behind it (the first opaque background up). */
export function colours(el) {
  const fg = window.getComputedStyle(el).color;
  let bg = 'rgba(0, 0, 0, 0)';
  for (let e = el; e && /rgba\(.*, 0\)|transparent/.test(bg); e = e.parentElement) bg = window.getComputedStyle(e).backgroundColor;
  return { fg, bg };
}


// On failure CI keeps only what is printed: the ends of the server's output channels and the stub's log.
export function showLogTails() {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name === 'Topic Forest.log' || entry.name.startsWith('stub')) found.push(p);
    }
  };
  walk(ART);
  for (const file of found.sort()) {
    const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    console.log(`----- ${path.relative(ART, file)} (last ${Math.min(60, lines.length)} of ${lines.length} lines)`);
    console.log(lines.slice(-60).join('\n'));
  }
}
