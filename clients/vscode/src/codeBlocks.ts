// A reply's code block into the editor: Insert at Cursor (the last text editor the user was in)
// and Apply to File (a diff of the file against the block; written only on Accept).
import * as vscode from 'vscode';

export const PROPOSAL_SCHEME = 'topicforest-proposal';

/** Serves the proposed contents the diff shows on its right (and an empty left for a new file). */
export class ProposalProvider implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private next = 0;

  add(path: string, text: string): vscode.Uri {
    this.next += 1;
    const uri = vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${path}`, query: String(this.next) });
    this.contents.set(uri.toString(), text);
    return uri;
  }

  remove(uri: vscode.Uri): void {
    this.contents.delete(uri.toString());
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }
}

/** Remembers the last text editor (the chat view takes the focus, not the editor's place). */
export class EditorTracker implements vscode.Disposable {
  private last: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private readonly subscription = vscode.window.onDidChangeActiveTextEditor((editor) => {
    if (editor) this.last = editor;
  });

  get editor(): vscode.TextEditor | undefined {
    const active = vscode.window.activeTextEditor;
    if (active) return active;
    const last = this.last;
    return last && vscode.window.visibleTextEditors.includes(last) ? last : undefined;
  }

  dispose(): void {
    this.subscription.dispose();
  }
}

/** A path the reply names, inside the first workspace folder; undefined for anything else. */
export function workspaceFile(path: string): vscode.Uri | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const parts = path.split('/');
  if (!folder || path.startsWith('/') || parts.some((p) => p === '..' || p === '')) return undefined;
  return vscode.Uri.joinPath(folder.uri, ...parts);
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

export class CodeBlockActions {
  constructor(private readonly proposals: ProposalProvider,
    private readonly editor: () => vscode.TextEditor | undefined) {}

  async insert(code: string): Promise<boolean> {
    const editor = this.editor();
    if (!editor) {
      void vscode.window.showInformationMessage('Insert at Cursor: open a file first; the code ' +
        'goes where its cursor is.');
      return false;
    }
    const done = await editor.edit((edit) => {
      for (const selection of editor.selections) edit.replace(selection, code);
    });
    await vscode.window.showTextDocument(editor.document, editor.viewColumn);
    return done;
  }

  /** Shows the diff, asks, writes on Accept. Returns whether the file was written. */
  async apply(code: string, path?: string): Promise<boolean> {
    const target = path ? workspaceFile(path) : this.editor()?.document.uri;
    if (!target) {
      void vscode.window.showWarningMessage(path
        ? `Apply to File: "${path}" is not a file in this workspace.`
        : 'Apply to File: the code block names no file, and no editor is open to apply it to.');
      return false;
    }
    const name = vscode.workspace.asRelativePath(target, false);
    const isNew = !(await exists(target));
    const left = isNew ? this.proposals.add(`${name} (new file)`, '') : target;
    const right = this.proposals.add(name, code);
    try {
      await vscode.commands.executeCommand('vscode.diff', left, right,
        `${name} ↔ proposed by Topic Forest`, { preview: true });
      const picked = await vscode.window.showInformationMessage(
        `Apply the proposed change to ${name}${isNew ? ' (a new file)' : ''}?`, 'Accept', 'Discard');
      if (picked !== 'Accept') return false;
      await this.write(target, code, isNew);
      vscode.window.setStatusBarMessage(`Applied to ${name}`, 3000);
      return true;
    } finally {
      this.proposals.remove(right);
      if (isNew) this.proposals.remove(left);
    }
  }

  private async write(target: vscode.Uri, code: string, isNew: boolean): Promise<void> {
    if (isNew) {
      await vscode.workspace.fs.writeFile(target, Buffer.from(code, 'utf8'));
      return;
    }
    const doc = await vscode.workspace.openTextDocument(target);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(target, doc.validateRange(new vscode.Range(0, 0, doc.lineCount, 0)), code);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`Could not edit ${target.fsPath}`);
    await doc.save();
  }
}
