// The chat page inside the webview. Model output is rendered with markdown-it (raw HTML off,
// images off) and then sanitized with DOMPurify; the CSP allows only our nonce'd script anyway.
import DOMPurify from 'dompurify';
import MarkdownIt from 'markdown-it';
import type { FromWebview, ToWebview } from '../src/chatMessages';
import type { Message } from '../src/protocol';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
md.disable('image'); // no remote loads from model output (tracking pixels, exfiltration)

const SAFE_URL = /^(https?:|mailto:|#)/i;
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    const href = node.getAttribute('href') ?? '';
    if (!SAFE_URL.test(href)) node.removeAttribute('href');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

export function renderMarkdown(text: string): DocumentFragment {
  return DOMPurify.sanitize(md.render(text), {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'img'],
    FORBID_ATTR: ['style'],
  });
}

function $<T extends HTMLElement>(id: string, type: new () => T): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`chat page: missing #${id}`);
  return element;
}
const log = $('log', HTMLElement);
const input = $('input', HTMLTextAreaElement);
const sendButton = $('send', HTMLButtonElement);
const stopButton = $('stop', HTMLButtonElement);
const status = $('status', HTMLElement);

interface Turn {
  id: string;
  body: HTMLElement;
  element: HTMLElement;
  parts: string[];
  next: number;
  pending: Map<number, string>;
  timer: number | undefined;
}
let turn: Turn | undefined;

function post(message: FromWebview): void {
  vscode.postMessage(message);
}

function addCopyButtons(root: HTMLElement): void {
  for (const pre of Array.from(root.querySelectorAll('pre'))) {
    const code = pre.querySelector('code');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy';
    button.textContent = 'Copy';
    button.title = 'Copy code';
    button.addEventListener('click', () => {
      post({ type: 'copy', text: (code ?? pre).textContent });
      button.textContent = 'Copied';
      setTimeout(() => (button.textContent = 'Copy'), 1500);
    });
    pre.classList.add('has-copy');
    pre.prepend(button);
  }
}

function renderInto(body: HTMLElement, text: string): void {
  body.replaceChildren(renderMarkdown(text));
  addCopyButtons(body);
}

function scrollToEnd(): void {
  log.scrollTop = log.scrollHeight;
}

function bubble(role: 'user' | 'assistant' | 'error', extraClass = ''): { element: HTMLElement; body: HTMLElement } {
  const element = document.createElement('article');
  element.className = `msg ${role} ${extraClass}`.trim();
  const who = document.createElement('div');
  who.className = 'who';
  who.textContent = role === 'user' ? 'You' : role === 'assistant' ? 'Assistant' : 'Error';
  const body = document.createElement('div');
  body.className = 'body';
  element.append(who, body);
  log.append(element);
  return { element, body };
}

function showMessage(m: Pick<Message, 'role' | 'content' | 'cancelled'>): void {
  const { element, body } = bubble(m.role);
  if (m.role === 'user') body.textContent = m.content;
  else renderInto(body, m.content);
  if (m.cancelled) markStopped(element);
}

function markStopped(element: HTMLElement): void {
  element.classList.add('cancelled');
  const note = document.createElement('div');
  note.className = 'note';
  note.textContent = 'Stopped';
  element.append(note);
}

function setBusy(busy: boolean): void {
  sendButton.hidden = busy;
  stopButton.hidden = !busy;
  status.textContent = busy ? 'Thinking…' : '';
}

function flush(t: Turn): void {
  t.timer = undefined;
  renderInto(t.body, t.parts.join(''));
  scrollToEnd();
}

/** Deltas carry an index: apply them in order, once, whatever order they arrive in. */
function onDelta(turnId: string, index: number, delta: string): void {
  const t = turn;
  if (!t || t.id !== turnId || index < t.next) return;
  t.pending.set(index, delta);
  while (t.pending.has(t.next)) {
    t.parts.push(t.pending.get(t.next) as string);
    t.pending.delete(t.next);
    t.next += 1;
  }
  t.timer ??= window.setTimeout(() => flush(t), 30);
}

function endTurn(turnId: string, reply: string | undefined, cancelled: boolean): void {
  const t = turn;
  if (!t || t.id !== turnId) return;
  if (t.timer !== undefined) clearTimeout(t.timer);
  const text = reply || t.parts.join('');
  if (text) renderInto(t.body, text);
  else t.element.remove();
  t.element.classList.remove('streaming');
  if (cancelled && text) markStopped(t.element);
  turn = undefined;
  setBusy(false);
  scrollToEnd();
}

function showError(message: Extract<ToWebview, { type: 'error' }>): void {
  if (message.turnId) endTurn(message.turnId, undefined, false);
  const { body } = bubble('error');
  const text = document.createElement('p');
  text.className = 'error-message';
  text.textContent = message.message;
  const hint = document.createElement('p');
  hint.className = 'error-hint';
  hint.textContent = message.hint;
  body.append(text, hint);
  for (const action of message.actions) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = action.label;
    button.addEventListener('click', () => post({ type: 'action', id: action.id }));
    body.append(button);
  }
  scrollToEnd();
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const m = event.data;
  switch (m.type) {
    case 'history':
      turn = undefined;
      setBusy(false);
      log.replaceChildren();
      m.messages.forEach(showMessage);
      scrollToEnd();
      break;
    case 'turnStart': {
      showMessage({ role: 'user', content: m.text, cancelled: false });
      const { element, body } = bubble('assistant', 'streaming');
      turn = { id: m.turnId, element, body, parts: [], next: 0, pending: new Map(), timer: undefined };
      setBusy(true);
      scrollToEnd();
      break;
    }
    case 'delta':
      onDelta(m.turnId, m.index, m.delta);
      break;
    case 'turnEnd':
      endTurn(m.turnId, m.reply, m.cancelled);
      break;
    case 'error':
      showError(m);
      break;
    case 'status':
      status.textContent = m.text;
      break;
  }
});

function send(): void {
  const text = input.value.trim();
  if (!text || turn) return;
  post({ type: 'send', text });
  input.value = '';
  vscode.setState({ draft: '' });
}

$('composer', HTMLFormElement).addEventListener('submit', (event) => {
  event.preventDefault();
  send();
});
input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  } else if (event.key === 'Escape' && turn) {
    post({ type: 'stop' });
  }
});
input.addEventListener('input', () => vscode.setState({ draft: input.value }));
stopButton.addEventListener('click', () => post({ type: 'stop' }));
$('new-thread', HTMLButtonElement).addEventListener('click', () => post({ type: 'newThread' }));
// Links open through the extension (http/https/mailto only); the webview never navigates.
log.addEventListener('click', (event) => {
  const link = (event.target as HTMLElement).closest('a');
  if (!link) return;
  event.preventDefault();
  const href = link.getAttribute('href');
  if (href && SAFE_URL.test(href) && !href.startsWith('#')) post({ type: 'openLink', href });
});

const saved = vscode.getState() as { draft?: string } | undefined;
if (saved?.draft) input.value = saved.draft;
input.focus();
sendButton.disabled = false; // the page's HTML keeps it off until this script handles sending
post({ type: 'ready' });
