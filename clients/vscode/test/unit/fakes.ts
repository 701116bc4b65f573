// A Connection that records requests and answers from a handler; notifications can be emitted.
import type { CancellationToken } from 'vscode';
import { Disposable, EventEmitter } from 'vscode';
import type { Connection, ServerState } from '../../src/connection';
import type {
  NotificationMethod, Notifications, ParamsOf, RequestMethod, ResultOf, Topic,
} from '../../src/protocol';

export interface Sent {
  method: RequestMethod;
  params: unknown;
  token?: CancellationToken;
}

type Handler = (method: RequestMethod, params: unknown, token?: CancellationToken) => unknown;

export class FakeConnection implements Connection {
  sent: Sent[] = [];
  state: ServerState = 'running';
  failure: string | undefined;
  private readonly stateEmitter = new EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateEmitter.event;

  setState(state: ServerState, failure?: string): void {
    this.state = state;
    this.failure = failure;
    this.stateEmitter.fire(state);
  }
  private readonly listeners = new Map<string, ((p: unknown) => void)[]>();

  constructor(public handler: Handler = () => ({})) {}

  async request<M extends RequestMethod>(method: M, params: ParamsOf<M>,
    token?: CancellationToken): Promise<ResultOf<M>> {
    this.sent.push({ method, params, token });
    return await (this.handler(method, params, token) as Promise<ResultOf<M>>);
  }

  notified: { method: string; params: unknown }[] = [];

  notify(method: string, params: unknown): void {
    this.notified.push({ method, params });
  }

  onNotification<N extends NotificationMethod>(method: N,
    handler: (params: Notifications[N]) => void): Disposable {
    const list = this.listeners.get(method) ?? [];
    list.push(handler as (p: unknown) => void);
    this.listeners.set(method, list);
    return new Disposable(() => undefined);
  }

  emit<N extends NotificationMethod>(method: N, params: Notifications[N]): void {
    for (const l of this.listeners.get(method) ?? []) l(params);
  }
}

export function makeTopic(overrides: Partial<Topic> = {}): Topic {
  return {
    id: 7, title: 'Parser errors in tokenize()', summary: 'I asked you about tokenize() in lexer.py.',
    pending: false, messageCount: 4, sourceTokens: 1530, summaryTokens: 40, pinned: false,
    expanded: false, dropped: false, files: ['src/lexer.py'], symbols: ['tokenize'],
    firstTime: 1_700_000_000, lastTime: 1_700_000_100,
    spend: { calls: 1, inputTokens: 300, outputTokens: 40 }, reshapes: [], ...overrides,
  };
}

export class Memento {
  private readonly data = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.data.get(key) as T | undefined;
  }
  update(key: string, value: unknown): Promise<void> {
    this.data.set(key, value);
    return Promise.resolve();
  }
  keys(): readonly string[] {
    return [...this.data.keys()];
  }
}
