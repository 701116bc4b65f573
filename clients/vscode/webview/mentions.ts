// The `@` completion under the chat's input: asks the extension for files (and @selection,
// @problems) matching the word before the caret, and attaches the one picked.
import type { FromWebview, MentionItem } from '../src/chatMessages';

export class Mentions {
  private request = 0;
  private items: MentionItem[] = [];
  private active = 0;

  constructor(private readonly input: HTMLTextAreaElement, private readonly list: HTMLUListElement,
    private readonly post: (message: FromWebview) => void, private readonly changed: () => void) {}

  /** The `@word` being typed just before the caret, if any. */
  private atCaret(): { start: number; query: string } | undefined {
    const before = this.input.value.slice(0, this.input.selectionStart);
    const m = /(^|\s)@([\w./-]*)$/.exec(before);
    return m ? { start: before.length - (m[2]?.length ?? 0) - 1, query: m[2] ?? '' } : undefined;
  }

  close(): void {
    this.list.hidden = true;
    this.items = [];
    this.input.removeAttribute('aria-activedescendant');
  }

  /** The extension's answer; an older request's is ignored. */
  answer(requestId: number, items: MentionItem[]): void {
    if (requestId === this.request) this.show(items);
  }

  private show(items: MentionItem[]): void {
    this.items = items;
    this.active = 0;
    if (!items.length || !this.atCaret()) return this.close();
    this.list.replaceChildren(...items.map((item, i) => {
      const li = document.createElement('li');
      li.id = `mention-${i}`;
      li.setAttribute('role', 'option');
      li.className = `mention ${item.kind}`;
      const label = document.createElement('span');
      label.textContent = item.kind === 'file' ? item.path : `@${item.kind}`;
      li.append(label);
      if (item.kind !== 'file') {
        const detail = document.createElement('span');
        detail.className = 'detail';
        detail.textContent = item.detail;
        li.append(detail);
      }
      li.addEventListener('mousedown', (event) => {
        event.preventDefault(); // keep the caret in the input
        this.pick(i);
      });
      return li;
    }));
    this.list.hidden = false;
    this.markActive();
  }

  private markActive(): void {
    this.list.querySelectorAll('li').forEach((li, i) => li.setAttribute('aria-selected', String(i === this.active)));
    this.input.setAttribute('aria-activedescendant', `mention-${this.active}`);
    this.list.querySelector(`#mention-${this.active}`)?.scrollIntoView({ block: 'nearest' });
  }

  private pick(index: number): void {
    const item = this.items[index];
    const at = this.atCaret();
    if (!item || !at) return this.close();
    const end = this.input.selectionStart;
    this.input.value = this.input.value.slice(0, at.start) + this.input.value.slice(end);
    this.input.selectionStart = this.input.selectionEnd = at.start;
    this.post({ type: 'attach', item });
    this.changed();
    this.close();
  }

  /** The input changed: ask for the `@word` at the caret, or close. */
  update(): void {
    const at = this.atCaret();
    if (!at) return this.close();
    this.request += 1;
    this.post({ type: 'mention', requestId: this.request, query: at.query });
  }

  /** true when the key was the popup's. */
  key(event: KeyboardEvent): boolean {
    if (this.list.hidden || !this.items.length) return false;
    const n = this.items.length;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      this.active = (this.active + (event.key === 'ArrowDown' ? 1 : n - 1)) % n;
      this.markActive();
    } else if (event.key === 'Enter' || event.key === 'Tab') {
      this.pick(this.active);
    } else if (event.key === 'Escape') {
      this.close();
    } else {
      return false;
    }
    event.preventDefault();
    event.stopPropagation();
    return true;
  }
}
