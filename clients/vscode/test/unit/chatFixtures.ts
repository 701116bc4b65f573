// Fixtures shared by chatTurns.test.ts and chatThreads.test.ts: a ChatController on a FakeConnection, replies, ticks.
import { fn } from 'jest-mock';
import type { ToWebview } from '../../src/chatMessages';
import { ChatController } from '../../src/chatView';
import type { ChatParams, Message } from '../../src/protocol';
import { FakeConnection, Memento } from './fakes';

type Handler = NonNullable<ConstructorParameters<typeof FakeConnection>[0]>;

/** The page's view of a turn: what these tests look at (header/setup/pending posts aside). */
const TURN_POSTS = new Set(['history', 'turnStart', 'delta', 'turnEnd', 'error', 'queued', 'interrupted', 'notice']);

export function setup(handler: Handler, options: ConstructorParameters<typeof ChatController>[3] = {}) {
  // listThreads (the header's title) answers an empty list unless the test's handler answers it
  const conn = new FakeConnection((method, params, token) => (method === 'topicForest/listThreads'
    && !handles.listThreads ? { threads: [] } : handler(method, params, token)));
  const handles = { listThreads: false };
  const afterTurn = fn();
  const state = new Memento();
  const chat = new ChatController(conn, state, afterTurn, options);
  const all: ToWebview[] = [];
  const posted: ToWebview[] = [];
  chat.attach({ postMessage: (m) => {
    all.push(m);
    if (TURN_POSTS.has(m.type)) posted.push(m);
    return Promise.resolve(true);
  } });
  const requests = (method: string) => conn.sent.filter((s) => s.method === method);
  return { conn, chat, posted, all, afterTurn, state, handles, requests };
}

export const userMessage = (id: number, content: string): Message => ({ id, threadId: 'x', role: 'user', content,
  timestamp: 1, tokens: 1, cancelled: false, attachments: [] });

export const tick = () => new Promise((r) => setTimeout(r, 0));

export const reply = (p: ChatParams, text: string, cancelled = false) => ({
  threadId: p.threadId, turnId: p.turnId, reply: text, cancelled,
  usage: { promptTokens: 1, completionTokens: 1 }, userMessageId: 1, replyMessageId: 2,
  context: { tokens: 1, budget: 1024, topics: [] }, attachments: [], model: 'openai/stub',
});
