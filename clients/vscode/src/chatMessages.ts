// Messages between the chat webview page (webview/chat.ts) and the extension (chatView.ts).
import type { ErrorAction } from './errors';
import type { Message } from './protocol';

export type ToWebview =
  | { type: 'history'; threadId: string; messages: Message[] }
  | { type: 'turnStart'; turnId: string; text: string }
  | { type: 'delta'; turnId: string; index: number; delta: string }
  | { type: 'turnEnd'; turnId: string; reply: string; cancelled: boolean }
  | { type: 'error'; turnId?: string; message: string; hint: string;
      actions: { id: ErrorAction; label: string }[] }
  | { type: 'status'; text: string };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'newThread' }
  | { type: 'copy'; text: string }
  | { type: 'openLink'; href: string }
  | { type: 'action'; id: ErrorAction };
