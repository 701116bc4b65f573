// Case 1's steps on the Topics view (run.mjs): drop/restore/preview, "What the Model Sees", a 300 px sidebar.
// Each takes run.mjs's context: { page, browser, url, shot, status, topicRows }.
import { check, compact, log, mark, rowLabels, runCommand, sleep, topicsPane, waitFor } from './harness.mjs';

/** The budget item's text in the status bar. */
export const statusText = async ({ status }) => (await status.first().innerText()).trim();

/** Drop, restore (the status bar follows), the budget's click, a preview, the background summary
 * reaching the tree and the preview, and one preview tab per topic. */
export async function dropRestorePreview(ctx) {
  const { page, shot, status, topicRows } = ctx;
  const row = topicRows.first();
  // found by the whole title its accessible label starts with (the row's label is cut to fit)
  const label = ((await row.getAttribute('aria-label')) ?? '').replace(/: (In the next|Not sent|Not in|Dropped|This server)[\s\S]*$/, '');
  const sameRow = topicsPane(page).locator(`.monaco-list-row[role="treeitem"][aria-label^="${label.replace(/["\\]/g, '\\$&')}: "]`);
  const before = await statusText(ctx);
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
  await waitFor('the status bar to change', async () => (await statusText(ctx)) !== before);
  const dropped = await statusText(ctx);
  mark('drop', tD);
  log(`after drop: status bar "${dropped}"`);
  await shot('04-dropped');

  const tR = Date.now();
  await menu(sameRow.first(), 'Restore');
  await waitFor('the row to lose "dropped"', async () => !/dropped$/.test(await sameRow.first().innerText()));
  await waitFor('the status bar to change back', async () => (await statusText(ctx)) !== dropped);
  mark('restore', tR);
  log(`after restore: status bar "${await statusText(ctx)}"`);
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
}

// "What the Model Sees" opens renderContext {threadId}; the budget shown and the rows marked
// as sent must be that render's (the view re-reads itself whenever the tree reloads)
// (`budgetNeeds`: the branch the budget check needs; a new thread has no recent messages, so
// there the figure was right before the honest budget too)
export async function contextViewMatchesBudget(ctx, name, budgetNeeds = 'chat-server') {
  const { page, shot, topicRows } = ctx;
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
  log(`what the model sees: ${JSON.stringify(await render())}; status bar "${await statusText(ctx)}"`);
  await shot(name);
  await check('the budget shown is the size of the thread\'s next request', budgetNeeds, async () => {
    const agree = async () => {
      const { tokens, budget } = await render();
      const header = await topicsPane(page).locator('.pane-header').innerText();
      return (await statusText(ctx)).endsWith(`${compact(tokens)}/${compact(budget)}`) &&
        header.includes(`${compact(tokens)} / ${compact(budget)} tokens`);
    };
    await waitFor('the status bar and the Topics header to show the render\'s tokens', agree, 15_000).catch(async (error) => {
      const header = (await topicsPane(page).locator('.pane-header').innerText()).replace(/\s+/g, ' ');
      throw new Error(`${error.message}: status bar "${await statusText(ctx)}", Topics header "${header}", ` +
        `render ${JSON.stringify(await render())}`);
    });
  });
  await check('the rows marked sent are the render\'s topics', 'chat-server', async () => {
    const marked = (await rowLabels(topicRows)).filter((t) => /: In the next request/.test(t)).length;
    const { sent } = await render();
    if (marked !== sent) throw new Error(`${marked} rows marked sent, the render has ${sent} topics`);
  });
}

// at a 300 px sidebar every topic row shows its figure whole
export async function sidebarAt300px({ page, shot, topicRows }) {
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
}
