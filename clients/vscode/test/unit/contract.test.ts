// The client's protocol mirror (src/protocol.ts) against the server's exported method table
// (server/topicforest/server/protocol.json = `python -m topicforest.server.protocol --json`).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { expect } from 'expect';
import {
  ATTACHMENT_REF_SHAPE, ATTACHMENT_SHAPE, CLIENT_NOTIFICATIONS, ErrorCodes, MESSAGE_SHAPE,
  NOTIFICATIONS, REQUESTS, SPEND_SHAPE, THREAD_SHAPE, TOPIC_SHAPE,
} from '../../src/protocol';

const TABLE = join(process.cwd(), '../../server/topicforest/server/protocol.json');

interface Param { type: string; required: boolean; nullable?: boolean; maxItems?: number }
interface Method {
  kind: 'request' | 'notification';
  direction: 'clientToServer' | 'serverToClient';
  params: Record<string, Param>;
  result: Record<string, string> | null;
}
interface Table {
  errors: Record<string, number>;
  shapes: Record<string, Record<string, string>>;
  methods: Record<string, Method>;
}

const table = existsSync(TABLE) ? JSON.parse(readFileSync(TABLE, 'utf8')) as Table : undefined;

describe('protocol contract with the server table', { skip: table ? false : 'no server table' }, () => {
  const t = table!;

  it('every request the client sends exists, with the params the client sends', () => {
    for (const [name, { params, result }] of Object.entries(REQUESTS)) {
      const method = t.methods[name]!;
      expect({ name, defined: name in t.methods }).toEqual({ name, defined: true });
      expect({ name, kind: method.kind, direction: method.direction })
        .toEqual({ name, kind: 'request', direction: 'clientToServer' });
      const serverParams = Object.keys(method.params).filter((p) => p !== 'workspaceUri');
      expect({ name, params: [...params].sort() }).toEqual({ name, params: serverParams.sort() });
      expect(Object.keys(method.result ?? {})).toEqual(expect.arrayContaining([...result]));
    }
  });

  it('required params are the ones the client always sends', () => {
    const required = (name: string) => Object.entries(t.methods[name]!.params)
      .filter(([, p]) => p.required).map(([k]) => k).sort();
    expect(required('topicForest/chat')).toEqual(['message', 'threadId', 'turnId']);
    expect(required('topicForest/threadHistory')).toEqual(['threadId']);
    for (const m of ['previewTopic', 'expandTopic', 'collapseTopic', 'dropTopic', 'restoreTopic', 'pinTopic']) {
      expect({ m, required: required(`topicForest/${m}`) }).toEqual({ m, required: ['topicId'] });
    }
    expect(t.methods['topicForest/chat']!.result).toMatchObject({ replyMessageId: 'integer|null' });
    expect(required('topicForest/renameThread')).toEqual(['threadId', 'title']);
    expect(required('topicForest/deleteThread')).toEqual(['threadId']);
    expect(required('topicForest/listTopics')).toEqual([]);
  });

  it('chat attachments are an array of the Attachment shape, at most 20', () => {
    expect(t.methods['topicForest/chat']!.params.attachments).toMatchObject(
      { type: 'Attachment[]', required: false, maxItems: 20 });
    expect(t.methods['topicForest/chat']!.params.retryOf).toMatchObject({ type: 'integer' });
    expect(t.methods['topicForest/chat']!.result).toMatchObject(
      { attachments: 'AttachmentRef[]', model: 'string' });
    expect(t.methods['topicForest/threadsChanged']!.params.threadId).toMatchObject({ nullable: true });
  });

  it('the client handles exactly the notifications the server sends, with their fields', () => {
    const fromServer = Object.entries(t.methods)
      .filter(([, m]) => m.kind === 'notification' && m.direction === 'serverToClient');
    expect(fromServer.map(([n]) => n).sort()).toEqual(Object.keys(NOTIFICATIONS).sort());
    for (const [name, m] of fromServer) {
      expect({ name, params: Object.keys(m.params).sort() }).toEqual(
        { name, params: [...NOTIFICATIONS[name as keyof typeof NOTIFICATIONS]].sort() });
    }
    for (const [name, fields] of Object.entries(CLIENT_NOTIFICATIONS)) {
      const m = t.methods[name]!;
      expect({ name, direction: m.direction }).toEqual({ name, direction: 'clientToServer' });
      expect(Object.keys(m.params).sort()).toEqual([...fields].sort());
    }
  });

  it('Topic, Message, Spend, Thread and the attachment shapes have the same fields and types', () => {
    expect(TOPIC_SHAPE).toEqual(t.shapes.Topic);
    expect(MESSAGE_SHAPE).toEqual(t.shapes.Message);
    expect(SPEND_SHAPE).toEqual(t.shapes.Spend);
    expect(THREAD_SHAPE).toEqual(t.shapes.Thread);
    expect(ATTACHMENT_SHAPE).toEqual(t.shapes.Attachment);
    expect(ATTACHMENT_REF_SHAPE).toEqual(t.shapes.AttachmentRef);
  });

  it('error codes match', () => {
    expect(ErrorCodes).toEqual(t.errors);
  });
});

const PYTHON = join(process.cwd(), '../../.venv/bin/python');

it('the checked-in table is what the server exports now', { skip: existsSync(PYTHON) && table ? false : 'no repo .venv' }, () => {
  const live = execFileSync(PYTHON, ['-m', 'topicforest.server.protocol', '--json'], { encoding: 'utf8' });
  expect(JSON.parse(live)).toEqual(table);
});

it('finds the server table in the repo', () => {
  expect({ TABLE, exists: existsSync(TABLE) }).toEqual({ TABLE, exists: true });
});
