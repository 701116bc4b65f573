import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import * as vscode from 'vscode';
import * as mock from '../mocks/vscode';
import {
  attachable, ATTACHABLE_SCHEMES, capText, excludeGlob, formatProblems, MAX_ATTACHMENTS, MAX_FILE_BYTES, PendingAttachments, rankPaths,
} from '../../src/attachments';
import { estimateTokens } from '../../src/format';
import { eventually } from '../eventually';

const uri = (path: string) => mock.Uri.file(`/ws/${path}`);

function editorOn(path: string, text: string, selection?: [number, number, number, number], language = 'python') {
  const doc = new mock.FakeDocument(uri(path), text, language);
  const selections = selection ? [new mock.Selection(...selection)] : undefined;
  return new mock.FakeEditor(doc, selections);
}

function pending(editor?: mock.FakeEditor) {
  let changes = 0;
  const list = new PendingAttachments(() => editor as unknown as vscode.TextEditor, () => { changes += 1; });
  return { list, changes: () => changes };
}

describe('attachments', () => {
  beforeEach(() => {
    mock.clearAllMocks();
    mock.workspace.workspaceFolders = [{ uri: mock.Uri.file('/ws') }];
    mock.workspace.textDocuments = [];
    mock.files.length = 0;
    mock.disk.clear();
    mock.diagnostics.clear();
    mock.configuration.clear();
  });

  it('the @ list leaves out files.exclude, dependencies and caches', async () => {
    mock.configuration.set('files.exclude', { '**/*.log': true, '**/build': false, '**/*.{a,b}': true });
    mock.files.push('src/app.py', 'README.md');
    const { list } = pending();
    expect(await list.mentions('app')).toEqual([{ kind: 'file', path: 'src/app.py' }]);
    const [include, exclude, max] = mock.workspace.findFiles.mock.calls[0]!;
    expect(include).toBe('**/*');
    expect(exclude).toContain('**/node_modules/**');
    expect(exclude).toContain('**/.git/**');
    expect(exclude).toContain('**/*.log');
    expect(exclude).not.toContain('**/build'); // switched off
    expect(max).toBe(5000);
    expect(excludeGlob(undefined)).toMatch(/^\{.*\}$/);
    await list.mentions('read'); // the listing is cached
    expect(mock.workspace.findFiles).toHaveBeenCalledTimes(1);
  });

  it('ranks basename prefixes first, then basename and path matches', () => {
    const paths = ['docs/app-notes.md', 'src/myapp.py', 'app/main.py', 'src/app.py', 'other.txt'];
    expect(rankPaths(paths, 'app')).toEqual(['src/app.py', 'docs/app-notes.md', 'src/myapp.py', 'app/main.py']);
    expect(rankPaths(paths, '')).toHaveLength(5);
    expect(rankPaths(paths, 'APP', 1)).toEqual(['src/app.py']);
  });

  it('@selection and @problems are offered for the last editor when they match what is typed', async () => {
    const editor = editorOn('src/app.py', 'a\nb\nc\n', [1, 0, 2, 1]);
    mock.diagnostics.set('/ws/src/app.py', [new mock.Diagnostic(new mock.Range(1, 0, 1, 1), 'x')]);
    const { list } = pending(editor);
    expect(await list.mentions('')).toEqual([
      { kind: 'selection', path: 'src/app.py', detail: 'lines 2–3 of src/app.py' },
      { kind: 'problems', path: 'src/app.py', detail: '1 problem in src/app.py' },
    ]);
    expect((await list.mentions('pro')).map((i) => i.kind)).toEqual(['problems']);
  });

  it('a selection is sent as its lines, with path, 0-based range and language', async () => {
    // ends at column 0 of line 3: lines 1-2 are what the user selected
    const { list, changes } = pending(editorOn('src/app.py', 'zero\none\ntwo\nthree\n', [1, 0, 3, 0]));
    expect(list.addSelection()).toBe(true);
    expect(list.addSelection()).toBe(false); // the same range once
    expect(changes()).toBe(1);
    expect(list.chips).toEqual([expect.objectContaining({ kind: 'selection', path: 'src/app.py',
      range: { startLine: 1, endLine: 2 } })]);
    expect(await list.take()).toEqual({
      attachments: [{ kind: 'selection', path: 'src/app.py', range: { startLine: 1, endLine: 2 },
        language: 'python', text: 'one\ntwo\n' }],
      chips: [{ kind: 'selection', path: 'src/app.py', range: { startLine: 1, endLine: 2 } }],
    });
    expect(list.size).toBe(0);
  });

  it('nothing selected: no selection attachment', () => {
    const { list } = pending(editorOn('src/app.py', 'x'));
    expect(list.addSelection()).toBe(false);
    expect(pending(undefined).list.addSelection()).toBe(false);
  });

  it('attaches only from a file or an untitled editor, never from a read-only view', async () => {
    const on = (scheme: string) => new mock.FakeEditor(new mock.FakeDocument(
      mock.Uri.from({ scheme, path: '/Topic 1 - lexer.md' }), '# Topic 1\nSummary\n', 'markdown'),
    [new mock.Selection(0, 0, 1, 7)]);
    for (const scheme of ['topicforest-preview', 'topicforest-context', 'topicforest-proposal', 'output', 'git']) {
      const { list, changes } = pending(on(scheme));
      expect(list.addSelection()).toBe(false);
      expect(await list.addMention({ kind: 'selection', path: 'Topic 1 - lexer.md', detail: '' })).toBe(false);
      expect(await list.addMention({ kind: 'problems', path: 'Topic 1 - lexer.md', detail: '' })).toBe(false);
      expect(await list.mentions('')).toEqual([]); // no @selection / @problems offered for it
      expect(changes()).toBe(0);
      expect(attachable(on(scheme) as unknown as vscode.TextEditor)).toBe(false);
    }
    expect(ATTACHABLE_SCHEMES).toEqual(['file', 'untitled']);
    for (const scheme of ATTACHABLE_SCHEMES) expect(pending(on(scheme)).list.addSelection()).toBe(true);
    expect(attachable(undefined)).toBe(false);
  });

  it('a listed file is attached by its own uri (a second workspace folder too)', async () => {
    mock.workspace.findFiles.mockResolvedValueOnce([mock.Uri.file('/other/tools/x.py')]);
    mock.workspace.asRelativePath.mockImplementation((u: mock.Uri) => u.path.replace(/^\/(ws|other)\//, ''));
    mock.disk.set('/other/tools/x.py', 'second folder');
    const { list } = pending();
    expect(await list.mentions('x')).toEqual([{ kind: 'file', path: 'tools/x.py' }]);
    await list.addMention({ kind: 'file', path: 'tools/x.py' });
    expect((await list.take()).attachments[0]?.text).toBe('second folder');
    mock.workspace.asRelativePath.mockImplementation((u: mock.Uri) => u.path.replace(/^\/ws\//, ''));
  });

  it('only a file the @ list offers is attached: a path the webview names beside it is refused', async () => {
    mock.files.push('src/app.py');
    mock.disk.set('/etc/passwd', 'root:x:0:0');
    mock.disk.set('/ws/.env', 'SECRET=1');
    const { list } = pending();
    for (const path of ['../../etc/passwd', '/etc/passwd', 'src/../../../etc/passwd', '.env']) {
      expect(await list.addMention({ kind: 'file', path })).toBe(false);
    }
    expect(await list.addMention({ kind: 'file', path: 'src/app.py' })).toBe(true);
    expect(list.chips.map((c) => c.path)).toEqual(['src/app.py']);
    expect(mock.workspace.fs.readFile.mock.calls.map(([u]) => u.path)).not.toContain('/etc/passwd');
  });

  it('a listed link that leads out of the workspace is refused; one that stays inside is attached', async () => {
    const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), 'tf-attach-'));
    const [ws, outside] = [nodePath.join(root, 'ws'), nodePath.join(root, 'outside')];
    fs.mkdirSync(nodePath.join(ws, 'src'), { recursive: true });
    fs.mkdirSync(outside);
    fs.writeFileSync(nodePath.join(outside, 'secret.txt'), 'outside');
    fs.writeFileSync(nodePath.join(ws, 'src/app.py'), 'inside');
    fs.symlinkSync(nodePath.join(outside, 'secret.txt'), nodePath.join(ws, 'notes.txt'));
    fs.symlinkSync(nodePath.join(ws, 'src/app.py'), nodePath.join(ws, 'alias.py'));
    mock.workspace.workspaceFolders = [{ uri: mock.Uri.file(ws) }];
    mock.workspace.findFiles.mockResolvedValueOnce(['notes.txt', 'alias.py'].map((f) => mock.Uri.file(nodePath.join(ws, f))));
    mock.workspace.asRelativePath.mockImplementation((u: mock.Uri) => nodePath.relative(ws, u.path));
    try {
      const { list } = pending();
      expect((await list.mentions('')).map((m) => m.path).sort()).toEqual(['alias.py', 'notes.txt']);
      expect(await list.addMention({ kind: 'file', path: 'notes.txt' })).toBe(false);
      expect(await list.addMention({ kind: 'file', path: 'alias.py' })).toBe(true);
    } finally {
      mock.workspace.asRelativePath.mockImplementation((u: mock.Uri) => u.path.replace(/^\/ws\//, ''));
    }
  });

  it('a file is read when the message goes out: the open (unsaved) buffer first, else the disk', async () => {
    mock.files.push('src/app.py', 'lib/util.py', 'gone.py');
    mock.disk.set('/ws/src/app.py', 'saved text');
    mock.disk.set('/ws/lib/util.py', 'on disk');
    mock.workspace.textDocuments = [new mock.FakeDocument(uri('src/app.py'), 'unsaved edit', 'python')];
    const { list } = pending();
    await list.addMention({ kind: 'file', path: 'src/app.py' });
    await list.addMention({ kind: 'file', path: 'lib/util.py' });
    await list.addMention({ kind: 'file', path: 'gone.py' });
    const { attachments } = await list.take();
    expect(attachments).toEqual([
      { kind: 'file', path: 'src/app.py', text: 'unsaved edit', language: 'python' },
      { kind: 'file', path: 'lib/util.py', text: 'on disk' },
      { kind: 'file', path: 'gone.py', text: expect.stringContaining('could not read gone.py') },
    ]);
  });

  it('problems are text lines path:line:col severity message', async () => {
    const a = new mock.Diagnostic(new mock.Range(9, 4, 9, 8), 'undefined name\n  "foo"', mock.DiagnosticSeverity.Error);
    a.source = 'ruff';
    const b = new mock.Diagnostic(new mock.Range(0, 0, 0, 1), 'unused import', mock.DiagnosticSeverity.Warning);
    expect(formatProblems('src/app.py', [a, b] as unknown as vscode.Diagnostic[])).toBe(
      'src/app.py:10:5 error undefined name "foo" [ruff]\nsrc/app.py:1:1 warning unused import');
    mock.diagnostics.set('/ws/src/app.py', [b]);
    const { list } = pending(editorOn('src/app.py', ''));
    await list.addMention({ kind: 'problems', path: 'src/app.py', detail: '' });
    expect((await list.take()).attachments).toEqual([{ kind: 'problems', path: 'src/app.py',
      text: 'src/app.py:1:1 warning unused import' }]);
  });

  it('a file over 200 KB is cut at a line end, with a line saying what was not sent', () => {
    const line = 'x'.repeat(99);
    const text = Array.from({ length: 3000 }, () => line).join('\n'); // 300 KB
    const capped = capText(text, 'big.txt');
    expect(Buffer.byteLength(capped)).toBeLessThan(MAX_FILE_BYTES + 200);
    const lines = capped.split('\n');
    expect(lines.at(-1)).toMatch(/^… \[truncated by the editor: lines 2001–3000 of big\.txt not sent/);
    expect(lines.slice(0, -1).every((l) => l === line)).toBe(true);
    expect(capText('small', 'a.txt')).toBe('small');
  });

  it('each pending chip shows its estimated tokens (the server\'s estimate), and the list their sum', async () => {
    mock.files.push('src/app.py');
    mock.disk.set('/ws/src/app.py', 'x'.repeat(299)); // 100 tokens + 1
    const { list, changes } = pending(editorOn('lib/é.py', 'héllo\n', [0, 0, 0, 6]));
    expect(estimateTokens('hello world')).toBe(5);
    expect(estimateTokens('héllo')).toBe(5); // 4 ASCII characters, 2 bytes of é
    await list.addMention({ kind: 'file', path: 'src/app.py' });
    list.addSelection();
    await eventually(() => expect(list.chips.map((c) => c.tokens)).toEqual([101, 5]));
    expect(list.tokens).toBe(106);
    expect(changes()).toBe(4); // each added, then costed
    list.remove(list.chips[0]!.id!);
    expect(list.tokens).toBe(5);
    expect((await list.take()).chips).toEqual([expect.not.objectContaining({ tokens: expect.anything() })]);
    expect(list.tokens).toBe(0);
  });

  it('removes a chip by id and holds at most 20 attachments', async () => {
    const { list } = pending();
    for (let i = 0; i < MAX_ATTACHMENTS + 2; i += 1) mock.files.push(`f${i}.py`);
    for (let i = 0; i < MAX_ATTACHMENTS + 2; i += 1) await list.addMention({ kind: 'file', path: `f${i}.py` });
    expect(list.size).toBe(MAX_ATTACHMENTS);
    const first = list.chips[0]!;
    list.remove(first.id!);
    expect(list.chips.map((c) => c.path)).not.toContain(first.path);
  });
});
