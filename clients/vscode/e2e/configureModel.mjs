// Configure Model through the UI, against a stub that requires its own key (issue 28): a wrong
// key is refused and said so in plain words, the right one answers; the key reaches no settings
// file, no log and no memory store.
import fs from 'node:fs';
import path from 'node:path';
import { dirs, extLog, log, runCommand, startStub, waitFor } from './harness.mjs';

const KEY = 'e2e-keyed-stub-0123456789'; // not sk-shaped: only redaction of given keys hides it
const WRONG = 'e2e-wrong-key-9876543210';

const toast = (page, text) => page.locator('.notifications-toasts .notification-list-item', { hasText: text });
const pickRow = (page, label) => page.locator('.quick-input-list .monaco-list-row',
  { has: page.locator('.label-name', { hasText: label }) }).first();

/** Walks Configure Model once: another OpenAI-compatible server at `base`, `key`, model "stub"
 * (picked from the server's list, or typed when the list cannot be had). */
async function configure(page, base, key, { typed }) {
  await runCommand(page, 'Topic Forest: Configure Model');
  const input = page.locator('.quick-input-widget input');
  await pickRow(page, /^Other OpenAI-compatible server$/).click();
  await waitFor('the URL box', async () => (await input.inputValue()) === 'http://127.0.0.1:8000/v1');
  await input.fill(base);
  await input.press('Enter');
  await waitFor('the key box (a password box)', async () => (await input.getAttribute('type')) === 'password');
  await input.fill(key);
  await input.press('Enter');
  if (!typed) {
    await pickRow(page, /^stub$/).waitFor({ timeout: 20_000 });
    await pickRow(page, /^stub$/).click();
    return;
  }
  await pickRow(page, /^Type a model name…$/).waitFor({ timeout: 20_000 });
  const placeholder = await input.getAttribute('placeholder');
  if (!placeholder?.includes(`could not list the models at ${base}: HTTP 401`)) {
    throw new Error(`the model list does not say why it is empty: ${placeholder}`);
  }
  await pickRow(page, /^Type a model name…$/).click();
  await waitFor('the model name box', async () => (await input.getAttribute('type')) !== 'password');
  await input.fill('stub');
  await input.press('Enter');
}

export async function configureModelScenario(page, shot) {
  const base = await startStub(['--api-key', KEY], 'stub-keyed');
  log(`configure model: a stub requiring its own key at ${base}`);

  await configure(page, base, WRONG, { typed: true });
  const refused = toast(page, 'The API key was refused for openai/stub');
  await refused.first().waitFor({ timeout: 90_000 });
  const said = (await refused.first().innerText()).replace(/\s+/g, ' ');
  log(`configure model, wrong key: ${said}`);
  if (!said.includes(`at ${base}`) || !said.includes('***') || said.includes(WRONG)) {
    throw new Error(`the refusal does not say it plainly, or shows the key: ${said}`);
  }
  await shot('20-configure-model-key-refused');
  await runCommand(page, 'Notifications: Clear All Notifications');

  await configure(page, base, KEY, { typed: false });
  await toast(page, 'openai/stub answered.').first().waitFor({ timeout: 90_000 });
  await shot('21-configure-model-answered');

  const settings = fs.readFileSync(path.join(dirs['ud/User'], 'settings.json'), 'utf8');
  const parsed = JSON.parse(settings);
  const entry = parsed['topicForest.models']?.find((m) => m?.model === 'openai/stub');
  if (parsed['topicForest.chatModel'] !== 'openai/stub' || entry?.apiBase !== base) {
    throw new Error(`settings not saved as configured: ${settings}`);
  }
  // no key in settings, the extension's log (the server's output too) or the memory's files
  const stored = [];
  const walk = (d) => {
    for (const e of fs.existsSync(d) ? fs.readdirSync(d, { withFileTypes: true }) : []) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else stored.push(fs.readFileSync(p).toString('latin1'));
    }
  };
  walk(dirs['xdg/data']);
  for (const [where, text] of [['settings.json', settings], ['the log', extLog()], ['the store', stored.join('\n')]]) {
    for (const key of [KEY, WRONG]) if (text.includes(key)) throw new Error(`a key in ${where}`);
  }
  log('configure model: refused in plain words, then answered; no key in settings, log or store');
}
