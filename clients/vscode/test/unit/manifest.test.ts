// The package.json contributions: menus show only what applies to each topic state.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { expect } from 'expect';
import pkg from '../../package.json';
import { MIN_PYTHON } from '../../src/python';
import { ATTACHABLE_SCHEMES } from '../../src/attachments';

/** Evaluates the `when` clauses used here: `a == b`, `a =~ /re/`, joined by `&&`. */
function when(clause: string, ctx: Record<string, string>): boolean {
  return clause.split('&&').every((part) => {
    const m = /^\s*(\w+)\s*(==|=~)\s*(.+?)\s*$/.exec(part);
    if (!m) throw new Error(`unsupported when clause: ${part}`);
    const [, key, op, rhs] = m as unknown as [string, string, string, string];
    const value = ctx[key] ?? '';
    if (op === '==') return value === rhs;
    const re = /^\/(.*)\/([a-z]*)$/.exec(rhs);
    if (!re) throw new Error(`bad regex ${rhs}`);
    return new RegExp(re[1]!, re[2]).test(value);
  });
}

const contextMenu = (viewItem: string): string[] => pkg.contributes.menus['view/item/context']
  .filter((e) => e.group !== 'inline' && when(e.when, { view: 'topicForest.topics', viewItem }))
  .map((e) => e.command.replace('topicForest.', ''))
  .sort();

describe('package.json contributions', () => {
  for (const [viewItem, expected] of [
    ['topic', ['copySummary', 'dropTopic', 'expandTopic', 'pinTopic', 'previewTopic']],
    ['topic.pinned', ['copySummary', 'dropTopic', 'expandTopic', 'previewTopic', 'unpinTopic']],
    ['topic.expanded', ['collapseTopic', 'copySummary', 'dropTopic', 'pinTopic', 'previewTopic']],
    ['topic.pinned.expanded', ['collapseTopic', 'copySummary', 'dropTopic', 'previewTopic', 'unpinTopic']],
    ['topic.dropped', ['copySummary', 'previewTopic', 'restoreTopic']],
    ['topicMessage', []],
  ] as const) {
    it(`context menu of ${viewItem} shows ${expected.join(', ') || 'nothing'}`, () => {
      expect(contextMenu(viewItem)).toEqual(expected);
    });
  }

  it('hides item-only commands from the command palette', () => {
    const hidden = pkg.contributes.menus.commandPalette.filter((e) => e.when === 'false')
      .map((e) => e.command);
    const itemOnly = new Set(pkg.contributes.menus['view/item/context'].map((e) => e.command));
    expect(new Set(hidden)).toEqual(itemOnly);
    expect(hidden).not.toContain('topicForest.restartServer');
  });

  it('the chat gets the sidebar\'s height: Chat starts at four fifths, Topics at one (both movable)', () => {
    const views = pkg.contributes.views.topicForest as { id: string; initialSize?: number }[];
    expect(views.map((v) => [v.id, v.initialSize])).toEqual([['topicForest.chat', 4], ['topicForest.topics', 1]]);
  });

  it('every setting has one type, so the Settings UI can edit it (History Budget: "auto" or a number)', () => {
    const properties = Object.entries(pkg.contributes.configuration.properties) as [string, { type?: unknown }][];
    expect(properties.filter(([, p]) => Array.isArray(p.type)).map(([k]) => k)).toEqual([]);
    const budget = pkg.contributes.configuration.properties['topicForest.historyBudget'] as { pattern: string };
    const pattern = new RegExp(budget.pattern);
    expect(['auto', '4096'].every((v) => pattern.test(v))).toBe(true);
    expect(['', '0', '-5', 'lots'].some((v) => pattern.test(v))).toBe(false);
  });

  it('"What the Model Sees" is in the Topics view\'s title bar and the command palette', () => {
    expect(pkg.contributes.commands).toContainEqual(expect.objectContaining(
      { command: 'topicForest.showContext', title: 'What the Model Sees', category: 'Topic Forest' }));
    expect(pkg.contributes.menus['view/title']).toContainEqual(expect.objectContaining(
      { command: 'topicForest.showContext', when: 'view == topicForest.topics' }));
    expect(pkg.contributes.menus.commandPalette.map((e) => e.command)).not.toContain('topicForest.showContext');
  });

  it('an untrusted workspace cannot choose the interpreter or redirect the model or the memory', () => {
    expect(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations).toEqual(
      expect.arrayContaining(['topicForest.python', 'topicForest.apiBase', 'topicForest.storeUrl']));
  });

  it('registers every contributed command somewhere in src/', () => {
    const src = readdirSync('src').map((f) =>
      readFileSync(join('src', f), 'utf8')).join('\n');
    const missing = pkg.contributes.commands.map((c) => c.command).filter((c) => !src.includes(`'${c}'`));
    expect(missing).toEqual([]);
  });

  it('declares the container, both views and an engine that accepts VS Code 1.100', () => {
    expect(pkg.contributes.viewsContainers.activitybar[0]?.title).toBe('Topic Forest');
    expect(pkg.contributes.views.topicForest.map((v) => v.id)).toEqual(['topicForest.chat', 'topicForest.topics']);
    expect(pkg.contributes.views.topicForest[0]?.type).toBe('webview');
    const m = /^\^1\.(\d+)\.\d+$/.exec(pkg.engines.vscode);
    expect(Number(m?.[1])).toBeLessThanOrEqual(100);
    expect(pkg.dependencies['vscode-languageclient']).toMatch(/^9\./);
  });

  it('has the Python package\'s version and its minimum Python', () => {
    const init = readFileSync('../../server/topicforest/__init__.py', 'utf8');
    expect(pkg.version).toBe(/__version__ = "([^"]+)"/.exec(init)?.[1]);
    const pyproject = readFileSync('../../pyproject.toml', 'utf8');
    expect(/requires-python = ">=([\d.]+)"/.exec(pyproject)?.[1]).toBe(MIN_PYTHON.join('.'));
  });

  it('packs the bundled wheel and its pins into the .vsix', () => {
    const ignore = readFileSync('.vscodeignore', 'utf8').split('\n');
    expect(ignore).toEqual(expect.arrayContaining(['!bundled/*.whl', '!bundled/constraints.txt']));
  });

  it('puts code into the chat from the editor: context menu entries and a keybinding that shadows no common default', () => {
    const menu = pkg.contributes.menus['editor/context'];
    expect(menu.map((e) => e.command)).toEqual(['topicForest.askTopicForest', 'topicForest.addSelectionToChat']);
    // offered where a selection can be attached: a file or an untitled editor (ATTACHABLE_SCHEMES)
    const when = menu.find((e) => e.command === 'topicForest.addSelectionToChat')?.when ?? '';
    const schemes = /^editorHasSelection && resourceScheme =~ \/\^\(([\w|-]+)\)\$\/$/.exec(when)?.[1];
    expect(schemes?.split('|')).toEqual([...ATTACHABLE_SCHEMES]);
    const [binding] = pkg.contributes.keybindings;
    expect(binding?.command).toBe('topicForest.askTopicForest');
    expect(binding?.when).toBe('editorTextFocus');
    // VS Code 1.100 defaults: ctrl/cmd+shift+L select all occurrences, ctrl/cmd+L expand line
    // selection, ctrl+shift+alt+L a chat action, cmd+alt+L (mac) toggle context lines
    const taken = ['ctrl+shift+l', 'cmd+shift+l', 'ctrl+l', 'cmd+l', 'ctrl+shift+alt+l', 'cmd+alt+l'];
    expect(taken).not.toContain(binding?.key);
    expect(taken).not.toContain(binding?.mac);
  });

  it('offers the model picker\'s list as a setting: strings, or models with their own endpoint', () => {
    const props = pkg.contributes.configuration.properties as unknown as Record<string, { type: unknown;
      default: unknown; items?: { anyOf?: unknown[] }; markdownDescription?: string }>;
    const models = props['topicForest.models'];
    expect(models).toMatchObject({ type: 'array', default: [] });
    expect(models?.items?.anyOf).toEqual([{ type: 'string' }, expect.objectContaining({
      type: 'object', required: ['model'], properties: expect.objectContaining({
        apiBase: expect.objectContaining({ type: ['string', 'null'] }) }) })]);
    expect(models?.markdownDescription).toContain('#topicForest.chatModel#');
  });

  it('has Configure Model and Test Chat Model, and no second name for either', () => {
    const titles = (pkg.contributes.commands as { command: string; title: string }[])
      .filter((c) => /model/i.test(c.command)).map((c) => `${c.command}: ${c.title}`);
    expect(titles).toEqual(['topicForest.configureModel: Configure Model',
      'topicForest.testModel: Test Chat Model']);
  });
});
