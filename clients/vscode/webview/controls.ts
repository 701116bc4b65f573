// The page's buttons, and the header bar (language or file, Copy / Insert / Apply) above each code
// block of a reply.
import type { FromWebview } from '../src/chatMessages';
import { codeTarget } from '../src/codeTarget';

export function button(label: string, onClick: () => void, className = '', title = ''): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  if (className) b.className = className;
  if (title) b.title = title;
  b.addEventListener('click', onClick);
  return b;
}

export function flash(b: HTMLButtonElement, text: string): void {
  const label = b.textContent;
  b.textContent = text;
  setTimeout(() => (b.textContent = label), 1500);
}

// --- code blocks: a header bar (language, file, Copy / Insert / Apply) above each block ---

export function decorateCodeBlocks(root: HTMLElement, post: (message: FromWebview) => void): void {
  for (const block of Array.from(root.querySelectorAll<HTMLElement>('.code-block'))) {
    const code = block.querySelector('code')?.textContent ?? '';
    const info = block.dataset.info ?? '';
    const before = block.previousElementSibling?.textContent ?? '';
    const target = codeTarget(info, before, code);
    const header = document.createElement('div');
    header.className = 'code-header';
    const label = document.createElement('span');
    label.className = 'code-label';
    label.textContent = target ?? (/language-([\w+#-]+)/.exec(block.querySelector('code')?.className ?? '')?.[1] ?? '');
    const actions = document.createElement('span');
    actions.className = 'code-actions';
    const copy = button('Copy', () => {
      post({ type: 'copy', text: code });
      flash(copy, 'Copied');
    }, 'copy', 'Copy code');
    actions.append(copy,
      button('Insert', () => post({ type: 'insert', code }), 'insert', 'Insert at Cursor'),
      button('Apply', () => post({ type: 'apply', code, ...(target ? { path: target } : {}) }), 'apply',
        `Apply to ${target ?? 'a file you pick'} (shows the change first)`));
    header.append(label, actions);
    block.prepend(header);
  }
}
