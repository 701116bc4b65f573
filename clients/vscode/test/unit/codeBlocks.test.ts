import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import type * as vscode from 'vscode';
import * as mock from '../mocks/vscode';
import { CodeBlockActions, ProposalProvider, workspaceFile } from '../../src/codeBlocks';
import { blockTarget, fenceLanguage } from '../../src/codeTarget';

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

  it('never a path that climbs out or is absolute', () => {
    expect(blockTarget('python ../secrets.py', '')).toBeUndefined();
    expect(blockTarget('', '/etc/passwd.txt:')).toBeUndefined();
    mock.workspace.workspaceFolders = [{ uri: mock.Uri.file('/ws') }];
    expect(workspaceFile('a/../../b.py')).toBeUndefined();
    expect(workspaceFile('/etc/x.py')).toBeUndefined();
    expect(workspaceFile('src/app.py')?.path).toBe('/ws/src/app.py');
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

  it('Apply without a named file targets the active editor\'s file; a new file is created on Accept', async () => {
    mock.window.showInformationMessage.mockResolvedValueOnce('Accept');
    expect(await actions.apply('x = 1\n')).toBe(true);
    expect(doc.text).toBe('x = 1\n');

    mock.window.showInformationMessage.mockResolvedValueOnce('Accept');
    expect(await actions.apply('print("new")\n', 'src/new_module.py')).toBe(true);
    expect(mock.disk.get('/ws/src/new_module.py')).toBe('print("new")\n');
    expect(String(mock.window.showInformationMessage.mock.calls.at(-1)?.[0])).toContain('a new file');
  });

  it('Apply refuses a path outside the workspace, and no file at all, with a warning', async () => {
    expect(await actions.apply('x', '../../etc/passwd.txt')).toBe(false);
    editor = undefined;
    expect(await actions.apply('x')).toBe(false);
    expect(mock.window.showWarningMessage).toHaveBeenCalledTimes(2);
    expect(mock.commands.executeCommand).not.toHaveBeenCalledWith('vscode.diff', expect.anything(),
      expect.anything(), expect.anything(), expect.anything());
  });
});
