// Messages between the chat webview page (webview/chat.ts) and the extension (chatView.ts).
import type { ServerState } from './connection';
import type { ErrorAction } from './errors';
import type { AttachmentKind, LineRange, Message } from './protocol';

/** An attachment as the page shows it: pending ones (above the input) carry an id to remove. */
export interface Chip {
  id?: string;
  kind: AttachmentKind;
  path: string;
  range?: LineRange | null;
  truncated?: boolean;
  tokens?: number; // a pending one's estimated cost in the next request
}

/** One row of the `@` completion list. */
export type MentionItem =
  | { kind: 'file'; path: string }
  | { kind: 'selection' | 'problems'; path: string; detail: string };

/** The mark of a turn stopped before its first token (it stays on the page, with Retry). */
export const STOPPED_EMPTY = 'Stopped before the reply began.';

export type ErrorButton = { id: ErrorAction; label: string };

export type ToWebview =
  | { type: 'history'; threadId: string; messages: Message[] }
  /** `resend`: the question is on the page already (a retry, or a queued message going out). */
  | { type: 'turnStart'; turnId: string; text: string; attachments: Chip[]; resend: boolean }
  | { type: 'delta'; turnId: string; index: number; delta: string }
  | { type: 'turnEnd'; turnId: string; reply: string; cancelled: boolean }
  /** the server went away mid-turn: keep the partial reply, marked, with Retry */
  | { type: 'interrupted'; turnId?: string; text: string; partial: string; attachments: Chip[];
      reason: string }
  /** typed while the server was down: shown, kept, sent when the server is back */
  | { type: 'queued'; turnId?: string; text: string; attachments: Chip[]; reason: string; actions: ErrorButton[] }
  | { type: 'error'; turnId?: string; message: string; hint: string; actions: ErrorButton[];
      retry: boolean }
  | { type: 'status'; text: string }
  | { type: 'pending'; attachments: Chip[] }
  | { type: 'mentions'; requestId: number; items: MentionItem[] }
  | { type: 'header'; title: string; models: string[]; model: string | null }
  /** what an empty chat offers to fix first */
  | { type: 'setup'; server: ServerState; reason: string | null; model: boolean }
  | { type: 'notice'; text: string }
  | { type: 'focusInput' };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'retry' }
  | { type: 'threads' }
  | { type: 'pickModel'; model: string }
  | { type: 'copy'; text: string }
  | { type: 'insert'; code: string }
  | { type: 'apply'; code: string; path?: string }
  | { type: 'mention'; requestId: number; query: string }
  | { type: 'attach'; item: MentionItem }
  | { type: 'detach'; id: string }
  | { type: 'openLink'; href: string }
  | { type: 'action'; id: ErrorAction };
