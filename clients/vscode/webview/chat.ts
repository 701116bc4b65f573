// The chat page inside the webview. Model output goes through markdown.ts (markdown-it, no raw
// HTML, no images, highlight.js, DOMPurify); everything else is set as text. The CSP allows only
// our nonce'd script; every handler is attached here, none inline.
import { type Chip, type ErrorButton, type FromWebview, STOPPED_EMPTY, type ToWebview } from '../src/chatMessages';
import { compactTokens } from '../src/format';
import type { Message } from '../src/protocol';
import { button, decorateCodeBlocks, flash } from './controls';
import { isSafeUrl, renderMarkdown } from './markdown';
import { Mentions } from './mentions';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();

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
const chips = $('chips', HTMLUListElement);
const mentions = $('mentions', HTMLUListElement);
const welcome = $('welcome', HTMLElement);
const setup = $('setup', HTMLElement);
const notice = $('notice', HTMLElement);
const modelSelect = $('model', HTMLSelectElement);
const threadTitle = $('thread-title', HTMLElement);

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
/** The raw text of each message bubble, for its Copy button. */
const rawText = new WeakMap<HTMLElement, string>();

function post(message: FromWebview): void {
  vscode.postMessage(message);
}

function renderInto(body: HTMLElement, text: string): void {
  body.replaceChildren(renderMarkdown(text));
  decorateCodeBlocks(body, post);
}

// --- messages ---

function scrollToEnd(): void {
  log.scrollTop = log.scrollHeight;
}

function updateWelcome(): void {
  welcome.hidden = log.querySelector('.msg') !== null;
}

function chipLabel(chip: Chip): string {
  const name = chip.path.slice(chip.path.lastIndexOf('/') + 1);
  if (chip.kind === 'problems') return `problems: ${name}`;
  const range = chip.range ? `:${chip.range.startLine + 1}-${chip.range.endLine + 1}` : '';
  return `${name}${range}${chip.truncated ? ' (truncated)' : ''}`;
}

function chipList(list: Chip[], removable: boolean): HTMLUListElement {
  const ul = document.createElement('ul');
  ul.className = 'chips';
  fillChips(ul, list, removable);
  return ul;
}

function fillChips(ul: HTMLUListElement, list: Chip[], removable: boolean): void {
  ul.replaceChildren(...list.map((chip) => {
    const li = document.createElement('li');
    li.className = `chip ${chip.kind}`;
    li.title = chip.path;
    const text = document.createElement('span');
    // a pending one's estimated cost: attachments go beside the history budget, not in it
    text.textContent = chipLabel(chip) + (chip.tokens === undefined ? '' : ` · ~${compactTokens(chip.tokens)} tok`);
    li.append(text);
    const id = chip.id;
    if (removable && id) {
      const remove = button('×', () => post({ type: 'detach', id }), 'chip-remove');
      remove.setAttribute('aria-label', `Remove ${chipLabel(chip)}`);
      li.append(remove);
    }
    return li;
  }));
  ul.hidden = list.length === 0;
}

type Role = 'user' | 'assistant' | 'error';

function bubble(role: Role, extraClass = '', after?: Element): { element: HTMLElement; body: HTMLElement } {
  const element = document.createElement('article');
  element.className = `msg ${role} ${extraClass}`.trim();
  const head = document.createElement('div');
  head.className = 'msg-head';
  const who = document.createElement('span');
  who.className = 'who';
  who.textContent = role === 'user' ? 'You' : role === 'assistant' ? 'Assistant' : 'Error';
  const actions = document.createElement('span');
  actions.className = 'msg-actions';
  if (role !== 'error') {
    const copy = button('Copy', () => {
      post({ type: 'copy', text: rawText.get(element) ?? body.innerText });
      flash(copy, 'Copied');
    }, 'msg-copy', 'Copy message');
    actions.append(copy);
  }
  head.append(who, actions);
  const body = document.createElement('div');
  body.className = 'body';
  element.append(head, body);
  if (after) after.after(element);
  else log.append(element);
  updateWelcome();
  return { element, body };
}

function showUser(text: string, attachments: Chip[], after?: Element): HTMLElement {
  const { element, body } = bubble('user', '', after);
  body.textContent = text;
  rawText.set(element, text);
  if (attachments.length) element.append(chipList(attachments, false));
  return element;
}

function showMessage(m: Message): void {
  if (m.role === 'user') {
    showUser(m.content, m.attachments.map((a) => ({ kind: a.kind, path: a.path, range: a.range ?? null,
      truncated: a.truncated })));
    return;
  }
  const { element, body } = bubble('assistant');
  rawText.set(element, m.content);
  renderInto(body, m.content);
  if (m.cancelled) markStopped(element);
}

function markStopped(element: HTMLElement, text = 'Stopped'): void {
  element.classList.add('cancelled');
  addNote(element, text);
}

function addNote(element: HTMLElement, text: string, className = 'note'): HTMLElement {
  const note = document.createElement('div');
  note.className = className;
  note.textContent = text;
  element.append(note);
  return note;
}

const retryButton = (): HTMLButtonElement =>
  button('Retry', () => post({ type: 'retry' }), 'retry', 'Ask the last question again');

/** Retry sits on the last reply only (and on errors / interrupted replies, which carry their own). */
function updateRetry(): void {
  for (const b of Array.from(log.querySelectorAll('.msg.assistant .msg-actions .retry'))) b.remove();
  const last = log.lastElementChild;
  if (!turn && last instanceof HTMLElement && last.matches('.msg.assistant:not(.interrupted)')) {
    last.querySelector('.msg-actions')?.append(retryButton());
  }
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

/** Ends the streaming turn; returns its bubble when it kept any text. */
function endTurn(turnId: string, reply: string | undefined, cancelled: boolean): HTMLElement | undefined {
  const t = turn;
  if (!t || t.id !== turnId) return undefined;
  if (t.timer !== undefined) clearTimeout(t.timer);
  const text = reply || t.parts.join('');
  turn = undefined;
  setBusy(false);
  t.element.classList.remove('streaming');
  if (!text && !cancelled) {
    t.element.remove();
    updateWelcome();
    return undefined;
  }
  rawText.set(t.element, text);
  renderInto(t.body, text);
  // stopped before its first token: the turn stays, marked, with Retry (on the last reply)
  if (cancelled) markStopped(t.element, text ? 'Stopped' : STOPPED_EMPTY);
  updateRetry();
  scrollToEnd();
  return t.element;
}

function startTurn(m: Extract<ToWebview, { type: 'turnStart' }>): void {
  let anchor: Element | undefined;
  if (m.resend) {
    const queued = log.querySelector('.msg.user.queued');
    if (queued) {
      queued.classList.remove('queued');
      queued.querySelector('.queued-note')?.remove();
      anchor = queued;
    } else {
      const users = log.querySelectorAll('.msg.user');
      anchor = users[users.length - 1];
      while (anchor?.nextElementSibling) anchor.nextElementSibling.remove();
    }
  }
  anchor ??= showUser(m.text, m.attachments);
  const { element, body } = bubble('assistant', 'streaming', anchor);
  turn = { id: m.turnId, element, body, parts: [], next: 0, pending: new Map(), timer: undefined };
  setBusy(true);
  updateRetry();
  scrollToEnd();
}

function actionButtons(actions: ErrorButton[]): HTMLButtonElement[] {
  return actions.map((a) => button(a.label, () => post({ type: 'action', id: a.id })));
}

function showError(m: Extract<ToWebview, { type: 'error' }>): void {
  if (m.turnId) endTurn(m.turnId, undefined, false);
  const { element, body } = bubble('error');
  const text = document.createElement('div');
  text.className = 'error-message';
  text.append(renderMarkdown(m.message)); // the server's advice may carry `code`
  body.append(text);
  if (m.hint) {
    const hint = document.createElement('p');
    hint.className = 'error-hint';
    hint.textContent = m.hint;
    body.append(hint);
  }
  const buttons = document.createElement('div');
  buttons.className = 'buttons';
  buttons.append(...actionButtons(m.actions));
  if (m.retry) buttons.append(retryButton());
  body.append(buttons);
  rawText.set(element, m.message);
  updateRetry();
  scrollToEnd();
}

/** Typed while the server was down (or it went away before answering): kept, marked, re-sent. */
function showQueued(m: Extract<ToWebview, { type: 'queued' }>): void {
  let element: Element | undefined;
  if (m.turnId && turn?.id === m.turnId) {
    endTurn(m.turnId, '', false);
    const users = log.querySelectorAll('.msg.user');
    element = users[users.length - 1];
  }
  element ??= showUser(m.text, m.attachments);
  element.classList.add('queued');
  element.querySelector('.queued-note')?.remove();
  const note = document.createElement('div');
  note.className = 'queued-note';
  const text = document.createElement('p');
  text.textContent = m.reason;
  const buttons = document.createElement('div');
  buttons.className = 'buttons';
  buttons.append(...actionButtons(m.actions), button('Send now', () => post({ type: 'retry' }), 'retry'));
  note.append(text, buttons);
  element.append(note);
  updateRetry();
  scrollToEnd();
}

/** The server went away mid-reply: the partial reply stays, marked, with Retry. */
function showInterrupted(m: Extract<ToWebview, { type: 'interrupted' }>): void {
  let element = m.turnId ? endTurn(m.turnId, m.partial, false) : undefined;
  if (!element) {
    const last = log.lastElementChild;
    const users = log.querySelectorAll('.msg.user');
    if (users[users.length - 1] === undefined || rawText.get(users[users.length - 1] as HTMLElement) !== m.text) {
      showUser(m.text, m.attachments);
    } else if (last instanceof HTMLElement && last.matches('.msg.assistant')) {
      last.remove(); // the stored partial: shown again below, marked
    }
    const shown = bubble('assistant');
    element = shown.element;
    rawText.set(element, m.partial);
    renderInto(shown.body, m.partial);
  }
  element.classList.add('interrupted');
  element.querySelector('.note')?.remove();
  const note = addNote(element, m.reason);
  note.append(' ', retryButton());
  updateRetry();
  scrollToEnd();
}

function showSetup(m: Extract<ToWebview, { type: 'setup' }>): void {
  const steps: HTMLElement[] = [];
  const step = (text: string, ...buttons: HTMLButtonElement[]): void => {
    const p = document.createElement('p');
    p.className = 'setup-step';
    p.textContent = text;
    if (buttons.length) p.append(' ', ...buttons);
    steps.push(p);
  };
  if (m.server === 'starting') step('Starting the server…');
  else if (m.server !== 'running') {
    step(`The server is not running${m.reason ? `: ${m.reason}` : '.'}`,
      ...actionButtons([{ id: 'restartServer', label: 'Restart Server' }, { id: 'showLog', label: 'Show Log' }]));
  }
  // while the server starts that is all there is to say: the model advice comes once it runs
  if (!m.model && m.server !== 'starting') {
    step('No chat model is set (topics work without one).',
      ...actionButtons([{ id: 'configureModel', label: 'Configure Model' }]));
  }
  setup.replaceChildren(...steps);
}

function showHeader(m: Extract<ToWebview, { type: 'header' }>): void {
  threadTitle.textContent = m.title;
  threadTitle.title = m.title;
  modelSelect.replaceChildren(...m.models.map((name) => {
    const option = document.createElement('option');
    option.value = name;
    option.textContent = name;
    option.selected = name === m.model;
    return option;
  }));
  modelSelect.hidden = m.models.length === 0;
}

function showNotice(text: string): void {
  notice.textContent = text;
  notice.hidden = false;
  setTimeout(() => (notice.hidden = true), 8000);
}

// --- @ completion (mentions.ts) ---

const mentionList = new Mentions(input, mentions, post, () => saveDraft());

// --- messages from the extension ---

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const m = event.data;
  switch (m.type) {
    case 'history':
      turn = undefined;
      setBusy(false);
      log.replaceChildren();
      m.messages.forEach(showMessage);
      updateRetry();
      updateWelcome();
      scrollToEnd();
      break;
    case 'turnStart':
      startTurn(m);
      break;
    case 'delta':
      onDelta(m.turnId, m.index, m.delta);
      break;
    case 'turnEnd':
      endTurn(m.turnId, m.reply, m.cancelled);
      break;
    case 'error':
      showError(m);
      break;
    case 'queued':
      showQueued(m);
      break;
    case 'interrupted':
      showInterrupted(m);
      break;
    case 'status':
      status.textContent = m.text;
      break;
    case 'pending':
      fillChips(chips, m.attachments, true);
      break;
    case 'mentions':
      mentionList.answer(m.requestId, m.items);
      break;
    case 'header':
      showHeader(m);
      break;
    case 'setup':
      showSetup(m);
      break;
    case 'notice':
      showNotice(m.text);
      break;
    case 'focusInput':
      input.focus();
      break;
  }
});

// --- what the user does ---

function saveDraft(): void {
  vscode.setState({ draft: input.value });
}

function send(): void {
  const text = input.value.trim();
  if (!text || turn) return;
  post({ type: 'send', text });
  input.value = '';
  mentionList.close();
  saveDraft();
}

$('composer', HTMLFormElement).addEventListener('submit', (event) => {
  event.preventDefault();
  send();
});
input.addEventListener('keydown', (event) => {
  if (mentionList.key(event)) return;
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
input.addEventListener('input', () => {
  saveDraft();
  mentionList.update();
});
input.addEventListener('blur', () => setTimeout(() => mentionList.close(), 150));
// Escape stops a reply from anywhere in the view (the @ list takes it first when open).
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && turn) {
    event.preventDefault();
    post({ type: 'stop' });
  }
});
stopButton.addEventListener('click', () => post({ type: 'stop' }));
$('threads', HTMLButtonElement).addEventListener('click', () => post({ type: 'threads' }));
modelSelect.addEventListener('change', () => post({ type: 'pickModel', model: modelSelect.value }));
// Links open through the extension (http/https/mailto only); the webview never navigates.
log.addEventListener('click', (event) => {
  const link = (event.target as HTMLElement).closest('a');
  if (!link) return;
  event.preventDefault();
  const href = link.getAttribute('href');
  if (href && isSafeUrl(href) && !href.startsWith('#')) post({ type: 'openLink', href });
});
// The view got the focus (its "focus" command, a click on its title): the caret goes to the input.
window.addEventListener('focus', () => {
  if (document.activeElement === document.body || document.activeElement === null) input.focus();
});

const saved = vscode.getState() as { draft?: string } | undefined;
if (saved?.draft) input.value = saved.draft;
updateWelcome();
input.focus();
sendButton.disabled = false; // the page's HTML keeps it off until this script handles sending
post({ type: 'ready' });
