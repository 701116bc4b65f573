// What the views and commands need from the server: typed requests and notifications.
// ServerManager implements it over vscode-languageclient; unit tests use a fake.
import type { CancellationToken, Disposable, Event } from 'vscode';
import type {
  ClientNotifications, NotificationMethod, Notifications, ParamsOf, RequestMethod, ResultOf,
} from './protocol';

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';

export interface Connection {
  request<M extends RequestMethod>(
    method: M, params: ParamsOf<M>, token?: CancellationToken): Promise<ResultOf<M>>;
  notify<N extends keyof ClientNotifications>(method: N, params: ClientNotifications[N]): void;
  onNotification<N extends NotificationMethod>(
    method: N, handler: (params: Notifications[N]) => void): Disposable;
  readonly state: ServerState;
  /** why the last start failed, while the server is not running */
  readonly failure?: string;
  readonly onDidChangeState: Event<ServerState>;
}
