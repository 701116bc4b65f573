// The client's one mirror of the server's method table (server/topicforest/server/protocol.py).
// test/unit/contract.test.ts checks these names and shapes against the server's JSON export.

export interface Spend {
  calls: number;
  inputTokens: number;
  outputTokens: number;
}

export interface Topic {
  id: number;
  title: string;
  summary: string | null;
  pending: boolean;
  messageCount: number;
  sourceTokens: number;
  summaryTokens: number;
  pinned: boolean;
  expanded: boolean;
  dropped: boolean;
  files: string[];
  symbols: string[];
  firstTime: number;
  lastTime: number;
  spend: Spend;
}

export type Role = 'user' | 'assistant';

export type AttachmentKind = 'file' | 'selection' | 'problems';

/** Lines, 0-based and inclusive. */
export interface LineRange {
  startLine: number;
  endLine: number;
}

/** Editor code sent with one chat turn (`text`: what the editor has, unsaved edits included). */
export interface Attachment {
  kind: AttachmentKind;
  path: string;
  range?: LineRange | null;
  language?: string | null;
  text: string;
}

/** What the server kept of an attachment: the chip on a sent message. */
export interface AttachmentRef {
  kind: AttachmentKind;
  path: string;
  range: LineRange | null;
  language: string | null;
  sha256: string;
  /** Tokens the request carried for it (within attachmentBudget). */
  tokens: number;
  /** Cut to fit, with a marker line naming the lines not sent. */
  truncated: boolean;
}

export interface Message {
  id: number;
  threadId: string;
  role: Role;
  /** The user's own text (reference lines become `attachments`). */
  content: string;
  timestamp: number;
  tokens: number;
  cancelled: boolean;
  attachments: AttachmentRef[];
}

export interface ContextTopic {
  id: number;
  mode: string;
  tokens: number;
}

export interface ChatParams {
  threadId: string;
  turnId: string;
  message: string;
  activeFile?: string;
  /** At most 20; sent with this turn only. */
  attachments?: Attachment[];
  /** This turn's chat model (overrides topicForest.chatModel). */
  model?: string;
  /** The thread's last user message id: answer it again (nothing new stored but the reply). */
  retryOf?: number;
}

export interface ChatResult {
  threadId: string;
  turnId: string;
  reply: string;
  cancelled: boolean;
  usage: { promptTokens: number; completionTokens: number };
  userMessageId: number;
  /** null when the turn was cancelled before any reply text. */
  replyMessageId: number | null;
  context: { tokens: number; budget: number; topics: ContextTopic[] };
  attachments: AttachmentRef[];
  /** The model that answered. */
  model: string;
}

export interface ChatDelta {
  threadId: string;
  turnId: string;
  index: number;
  delta: string;
}

export interface TopicIdParams {
  topicId: number;
}

export interface PinParams extends TopicIdParams {
  pinned?: boolean;
}

export interface TopicResult {
  topic: Topic;
}

export interface TopicMessagesResult {
  topic: Topic;
  messages: Message[];
}

export interface ListTopicsParams {
  /** The thread whose next request `used`/`rendered` describe (its hot messages included). */
  threadId?: string;
}

export interface ListTopicsResult {
  topics: Topic[];
  budget: number;
  /** Tokens of the next request's history (renderContext {threadId} with no query). */
  used: number;
  threadId: string | null;
  /** Topics in that request, in rank order, with their mode and cost. */
  rendered: ContextTopic[];
  /** Live topics left out of it for lack of room. */
  omittedTopics: number[];
}

export interface ThreadHistoryParams {
  threadId: string;
  limit?: number;
}

export interface ThreadHistoryResult {
  threadId: string;
  messages: Message[];
}

export interface ThreadInfo {
  threadId: string;
  messageCount: number;
  lastTime: number;
  title: string;
}

export interface RenameThreadParams {
  threadId: string;
  /** 1-200 characters. */
  title: string;
}

export interface DeleteThreadResult {
  threadId: string;
  deletedMessages: number;
}

export interface ThreadsChanged {
  workspaceUri: string;
  /** null: another window changed threads (list them again). */
  threadId: string | null;
}

export interface TopicsChanged {
  workspaceUri: string;
  reason: string;
  topicIds?: number[];
}

export interface RenderContextParams {
  query?: string | null;
  activeFile?: string | null;
  threadId?: string | null;
}

/** Exactly the history the model would receive next ("What the Model Sees"). `topics[].mode`:
 *  summary, summary+messages, messages, expanded or recalled. */
export interface RenderContextResult {
  messages: { role: string; content: string }[];
  tokens: number;
  budget: number;
  topics: ContextTopic[];
  omittedTopics: number[];
  hotMessageIds: number[];
  fallback: boolean;
}

/** Every request's params may carry the workspace it is about (default: first folder). */
export interface WorkspaceParam {
  workspaceUri?: string;
}

/** Request name -> [params, result]. */
export interface Requests {
  'topicForest/chat': [ChatParams, ChatResult];
  'topicForest/listTopics': [ListTopicsParams, ListTopicsResult];
  'topicForest/previewTopic': [TopicIdParams, TopicMessagesResult];
  'topicForest/expandTopic': [TopicIdParams, TopicMessagesResult];
  'topicForest/collapseTopic': [TopicIdParams, TopicResult];
  'topicForest/dropTopic': [TopicIdParams, TopicResult];
  'topicForest/restoreTopic': [TopicIdParams, TopicResult];
  'topicForest/pinTopic': [PinParams, TopicResult];
  'topicForest/searchTopics': [
    { query: string; limit?: number },
    { results: { topic: Topic; score: number }[] },
  ];
  'topicForest/renderContext': [RenderContextParams, RenderContextResult];
  'topicForest/listThreads': [Record<string, never>, { threads: ThreadInfo[] }];
  'topicForest/threadHistory': [ThreadHistoryParams, ThreadHistoryResult];
  'topicForest/renameThread': [RenameThreadParams, { thread: ThreadInfo }];
  'topicForest/deleteThread': [{ threadId: string }, DeleteThreadResult];
}

/** Notifications the client sends. */
export interface ClientNotifications {
  'topicForest/activeFileChanged': { uri: string | null };
}

/** Notification name -> params, for notifications the server sends. */
export interface Notifications {
  'topicForest/chatDelta': ChatDelta;
  'topicForest/topicsChanged': TopicsChanged;
  'topicForest/threadsChanged': ThreadsChanged;
}

export type RequestMethod = keyof Requests;
export type NotificationMethod = keyof Notifications;
export type ParamsOf<M extends RequestMethod> = Requests[M][0] & WorkspaceParam;
export type ResultOf<M extends RequestMethod> = Requests[M][1];

/** The methods this client calls, with the params/result fields it relies on (contract test). */
export const REQUESTS = {
  'topicForest/chat': {
    params: ['threadId', 'turnId', 'message', 'activeFile', 'attachments', 'model', 'retryOf'],
    result: ['reply', 'cancelled', 'turnId', 'threadId', 'attachments', 'model'],
  },
  'topicForest/listTopics': {
    params: ['threadId'],
    result: ['topics', 'budget', 'used', 'threadId', 'rendered', 'omittedTopics'],
  },
  'topicForest/previewTopic': { params: ['topicId'], result: ['topic', 'messages'] },
  'topicForest/expandTopic': { params: ['topicId'], result: ['topic', 'messages'] },
  'topicForest/collapseTopic': { params: ['topicId'], result: ['topic'] },
  'topicForest/dropTopic': { params: ['topicId'], result: ['topic'] },
  'topicForest/restoreTopic': { params: ['topicId'], result: ['topic'] },
  'topicForest/pinTopic': { params: ['topicId', 'pinned'], result: ['topic'] },
  'topicForest/searchTopics': { params: ['query', 'limit'], result: ['results'] },
  'topicForest/renderContext': {
    params: ['query', 'activeFile', 'threadId'],
    result: ['messages', 'tokens', 'budget', 'topics', 'omittedTopics', 'fallback'],
  },
  'topicForest/listThreads': { params: [], result: ['threads'] },
  'topicForest/threadHistory': { params: ['threadId', 'limit'], result: ['threadId', 'messages'] },
  'topicForest/renameThread': { params: ['threadId', 'title'], result: ['thread'] },
  'topicForest/deleteThread': { params: ['threadId'], result: ['threadId', 'deletedMessages'] },
} as const satisfies Record<RequestMethod, { params: readonly string[]; result: readonly string[] }>;

export const NOTIFICATIONS = {
  'topicForest/chatDelta': ['threadId', 'turnId', 'index', 'delta'],
  'topicForest/topicsChanged': ['workspaceUri', 'reason', 'topicIds'],
  'topicForest/threadsChanged': ['workspaceUri', 'threadId'],
} as const satisfies Record<NotificationMethod, readonly string[]>;

export const CLIENT_NOTIFICATIONS = {
  'topicForest/activeFileChanged': ['uri'],
} as const satisfies Record<keyof ClientNotifications, readonly string[]>;

/** The JSON types of the Topic and Message fields, in the server table's notation. */
export const TOPIC_SHAPE = {
  id: 'integer', title: 'string', summary: 'string|null', pending: 'boolean',
  messageCount: 'integer', sourceTokens: 'integer', summaryTokens: 'integer', pinned: 'boolean',
  expanded: 'boolean', dropped: 'boolean', files: 'string[]', symbols: 'string[]',
  firstTime: 'number', lastTime: 'number', spend: 'Spend',
} as const satisfies Record<keyof Topic, string>;

export const MESSAGE_SHAPE = {
  id: 'integer', threadId: 'string', role: '"user"|"assistant"', content: 'string',
  timestamp: 'number', tokens: 'integer', cancelled: 'boolean', attachments: 'AttachmentRef[]',
} as const satisfies Record<keyof Message, string>;

export const ATTACHMENT_SHAPE = {
  kind: '"file"|"selection"|"problems"', path: 'string', range: 'LineRange|null',
  language: 'string|null', text: 'string',
} as const satisfies Record<keyof Attachment, string>;

export const ATTACHMENT_REF_SHAPE = {
  kind: '"file"|"selection"|"problems"', path: 'string', range: 'LineRange|null',
  language: 'string|null', sha256: 'string', tokens: 'integer', truncated: 'boolean',
} as const satisfies Record<keyof AttachmentRef, string>;

export const THREAD_SHAPE = {
  threadId: 'string', messageCount: 'integer', lastTime: 'number', title: 'string',
} as const satisfies Record<keyof ThreadInfo, string>;

export const SPEND_SHAPE = {
  calls: 'integer', inputTokens: 'integer', outputTokens: 'integer',
} as const satisfies Record<keyof Spend, string>;

export const ErrorCodes = {
  InvalidParams: -32602,
  UnknownTopic: -32001,
  UnknownWorkspace: -32002,
  ChatModelNotConfigured: -32003,
  ProviderError: -32004,
  StoreError: -32005,
  RequestCancelled: -32800,
} as const;
