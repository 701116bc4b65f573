// A reply's code block into the editor: Insert at Cursor (the last text editor the user was in)
// and Apply to File (the block merged into its file, shown as a diff; written only on Accept).
import * as vscode from 'vscode';
import { withoutPathComment } from './codeTarget';
import { planApply } from './merge';
import { checkWorkspacePath } from './paths';

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

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

/** Closes the diff tabs that show `proposal` (decided: nothing is left to review). */
async function closeDiffs(proposal: vscode.Uri): Promise<void> {
  const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs).filter((tab) =>
    tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === proposal.toString());
  if (tabs.length) await vscode.window.tabGroups.close(tabs);
}

const list = (names: string[]): string => names.map((n) => `"${n}"`).join(', ');

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

  /** Where a block naming no file goes: the user picks (the active editor's file first). */
  private async pickTarget(): Promise<vscode.Uri | undefined> {
    const active = this.editor()?.document.uri;
    const files = await vscode.workspace.findFiles('**/*', '**/{node_modules,.git}/**', 2000);
    const uris = [...(active ? [active] : []), ...files.filter((f) => f.toString() !== active?.toString())];
    const picked = await vscode.window.showQuickPick(uris.map((uri) => ({
      label: vscode.workspace.asRelativePath(uri, false), uri,
      ...(uri === active ? { description: 'the active editor' } : {}),
    })), { title: 'Apply to which file?', placeHolder: 'The code block names no file', matchOnDescription: true });
    return picked?.uri;
  }

  /** Shows the change against the file, asks, writes on Accept. Returns whether it was written.
   * A function, class or region block replaces just that part of the file (see merge.ts). */
  async apply(block: string, path?: string): Promise<boolean> {
    const chosen = path ?? await this.pickTarget();
    if (!chosen) return false;
    const checked = await checkWorkspacePath(chosen);
    if ('refused' in checked) {
      void vscode.window.showWarningMessage(`Apply: ${checked.refused}`);
      return false;
    }
    const { uri: target, relative: name } = checked;
    if (checked.executes && await vscode.window.showWarningMessage(
      `${name} configures commands that VS Code or CI run. Review the proposed change to it with care.`,
      { modal: true }, 'Review the Change') !== 'Review the Change') return false;
    const code = path ? withoutPathComment(block, path) : block;
    const isNew = !(await exists(target));
    const doc = isNew ? undefined : await vscode.workspace.openTextDocument(target);
    const current = doc?.getText() ?? '';
    const version = doc?.version;
    let plan = planApply(current, code, name);
    if (plan.kind === 'none') {
      const append = 'Append to the End';
      const picked = await vscode.window.showWarningMessage(`Apply: no confident place for this block in ${name}: ` +
        `${plan.reason}. Nothing was changed.`, ...(plan.append ? [append] : []));
      if (picked !== append || !plan.append) return false;
      plan = { kind: 'whole', text: plan.append };
    }
    if (plan.text === current) {
      void vscode.window.showInformationMessage(`Apply: ${name} already has this code.`);
      return false;
    }
    const what = plan.kind === 'merge' ? ` (${[plan.replaced.length ? `replaces ${list(plan.replaced)}` : '',
      plan.added.length ? `adds ${list(plan.added)}` : ''].filter(Boolean).join('; ')}; the rest stays)`
      : isNew ? ' (a new file)' : ' (the whole file)';
    const left = isNew ? this.proposals.add(`${name} (new file)`, '') : target;
    const right = this.proposals.add(name, plan.text);
    try {
      await vscode.commands.executeCommand('vscode.diff', left, right,
        `${name} ↔ proposed by Topic Forest`, { preview: true });
      const picked = await vscode.window.showInformationMessage(
        `Apply the proposed change to ${name}?${what}`, 'Accept', 'Discard');
      if (picked !== 'Accept') return false;
      if (doc && doc.version !== version) {
        void vscode.window.showWarningMessage(`Apply: ${name} changed while the change was shown; nothing ` +
          'was written. Apply again to see it against the new text.');
        return false;
      }
      await this.write(target, plan.text, doc);
      vscode.window.setStatusBarMessage(`Applied to ${name}`, 3000);
      return true;
    } finally {
      await closeDiffs(right);
      this.proposals.remove(right);
      if (isNew) this.proposals.remove(left);
    }
  }

  private async write(target: vscode.Uri, text: string, doc: vscode.TextDocument | undefined): Promise<void> {
    if (!doc) {
      await vscode.workspace.fs.writeFile(target, Buffer.from(text, 'utf8'));
      return;
    }
    const edit = new vscode.WorkspaceEdit();
    edit.replace(target, doc.validateRange(new vscode.Range(0, 0, doc.lineCount, 0)), text);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`Could not edit ${target.fsPath}`);
    await doc.save();
  }
}
