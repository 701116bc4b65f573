// The chat's thread list (a quick pick: titles, last time, message count) to switch, rename and
// delete threads; "New thread" keeps the old ones reachable here.
import * as vscode from 'vscode';
import type { Connection } from './connection';
import { describeError } from './errors';
import { excerpt, formatTime } from './format';
import type { Thread as ThreadInfo } from './protocol';

export interface ThreadHost {
  readonly threadId: string;
  switchTo(threadId: string): Promise<void>;
  newThread(): Promise<void>;
  /** a thread is gone (deleted here): the view follows if it was the current one */
  deleted(threadId: string): Promise<void>;
  /** a title changed: the header shows it */
  renamed(): void;
}

type Item = vscode.QuickPickItem & { thread?: ThreadInfo };

const RENAME = { iconPath: new vscode.ThemeIcon('edit'), tooltip: 'Rename thread' };
const DELETE = { iconPath: new vscode.ThemeIcon('trash'), tooltip: 'Delete thread' };

export function describeThread(t: ThreadInfo): string {
  return `${t.messageCount} message${t.messageCount === 1 ? '' : 's'} · ${formatTime(t.lastTime)}`;
}

export class ThreadList {
  private picker: vscode.QuickPick<Item> | undefined;

  constructor(private readonly connection: Connection, private readonly host: ThreadHost) {}

  async threads(): Promise<ThreadInfo[]> {
    const { threads } = await this.connection.request('topicForest/listThreads', {});
    return [...threads].sort((a, b) => b.lastTime - a.lastTime);
  }

  /** Opens the list; switching, renaming and deleting happen from it. */
  async show(): Promise<void> {
    this.picker?.dispose();
    const picker = vscode.window.createQuickPick<Item>();
    this.picker = picker;
    picker.title = 'Topic Forest: chat threads';
    picker.placeholder = 'Switch to a thread (rename and delete with the buttons)';
    picker.matchOnDescription = true;
    picker.onDidAccept(() => void this.accept(picker.selectedItems[0]));
    picker.onDidTriggerItemButton((e) => void this.button(e.item, e.button));
    picker.onDidHide(() => {
      picker.dispose();
      if (this.picker === picker) this.picker = undefined;
    });
    picker.show();
    await this.refresh();
  }

  /** Reloads the open list (after a change here or in another window). */
  async refresh(): Promise<void> {
    const picker = this.picker;
    if (!picker) return;
    picker.busy = true;
    try {
      const items: Item[] = [{ label: '$(add) New thread', alwaysShow: true }];
      for (const thread of await this.threads()) {
        const current = thread.threadId === this.host.threadId;
        items.push({ label: excerpt(thread.title || '(untitled)', 80), thread,
          description: `${current ? '$(check) current · ' : ''}${describeThread(thread)}`,
          buttons: [RENAME, DELETE] });
      }
      picker.items = items;
    } catch (error) {
      picker.items = [{ label: '$(add) New thread', alwaysShow: true },
        { label: `$(warning) Could not list the threads: ${String(error)}` }];
    } finally {
      picker.busy = false;
    }
  }

  private async accept(item: Item | undefined): Promise<void> {
    if (!item) return;
    if (!item.thread && !item.label.includes('New thread')) return;
    this.picker?.hide();
    if (item.thread) await this.host.switchTo(item.thread.threadId);
    else await this.host.newThread();
  }

  private async button(item: Item, button: vscode.QuickInputButton): Promise<void> {
    if (!item.thread) return;
    try {
      const done = button === RENAME ? await this.rename(item.thread) : await this.delete(item.thread);
      if (done) await this.refresh();
    } catch (error) {
      void vscode.window.showErrorMessage(`Topic Forest: ${describeError(error).message}`);
    }
  }

  async rename(thread: ThreadInfo): Promise<boolean> {
    const title = await vscode.window.showInputBox({ title: 'Rename thread', value: thread.title,
      validateInput: (v) => (v.trim().length < 1 || v.trim().length > 200
        ? 'A title has 1 to 200 characters.' : undefined) });
    if (title === undefined) return false;
    await this.connection.request('topicForest/renameThread',
      { threadId: thread.threadId, title: title.trim() });
    this.host.renamed();
    return true;
  }

  async delete(thread: ThreadInfo): Promise<boolean> {
    const picked = await vscode.window.showWarningMessage(
      `Delete the thread "${excerpt(thread.title, 60)}"?`,
      { modal: true, detail: `Its ${describeThread(thread).replace(' · ', ', last ')}. Every message ` +
        'is removed from the memory, and from every topic: nothing of it stays in topics, ' +
        'summaries or titles. This cannot be undone.' },
      'Delete');
    if (picked !== 'Delete') return false;
    await this.connection.request('topicForest/deleteThread', { threadId: thread.threadId });
    await this.host.deleted(thread.threadId);
    return true;
  }
}
