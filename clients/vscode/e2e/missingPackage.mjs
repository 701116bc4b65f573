// Case 1's bad interpreter (run.mjs): topicForest.python set to a bare venv, the notification, Set Python Path, back.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { log, mark, RUN, waitFor } from './harness.mjs';

// Point topicForest.python at a bare venv: the extension restarts the server, finds no
// `topicforest` and says so with the install command and an Install button.
// Then "Set Python Path" from the User tab, and clearing it: back to the extension's own environment.
export async function missingPackageScenario({ page, shot, status, topicRows }) {
  const tM = Date.now();
  const bare = path.join(RUN, 'bare-venv');
  const venv = spawnSync('python3', ['-m', 'venv', '--without-pip', bare], { encoding: 'utf8' });
  if (venv.status !== 0) throw new Error(`python3 -m venv failed: ${venv.stderr}`);
  const quick = page.locator('.quick-input-widget input');
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
}
