// The client's protocol types (src/protocol.ts) are generated from the server's method table
// (server/topicforest/server/protocol.json = `python -m topicforest.server.codegen --json`) by
// `python -m topicforest.server.codegen --write`; these tests fail when either is stale, and
// pin the parts of the table the client's behaviour relies on.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { expect } from 'expect';
import { ErrorCodes, type RequestMethod } from '../../src/protocol';

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

  it('every request the client types exists in the table, as a request from the client', () => {
    const requests: Record<RequestMethod, true> = {
      'topicForest/chat': true, 'topicForest/listTopics': true, 'topicForest/previewTopic': true,
      'topicForest/expandTopic': true, 'topicForest/collapseTopic': true,
      'topicForest/dropTopic': true, 'topicForest/restoreTopic': true, 'topicForest/pinTopic': true,
      'topicForest/searchTopics': true, 'topicForest/renderContext': true,
      'topicForest/listThreads': true, 'topicForest/threadHistory': true,
      'topicForest/renameThread': true, 'topicForest/deleteThread': true,
      'topicForest/setApiKeys': true, 'topicForest/testModel': true,
    };
    for (const name of Object.keys(requests)) {
      const method = t.methods[name]!;
      expect({ name, kind: method.kind, direction: method.direction })
        .toEqual({ name, kind: 'request', direction: 'clientToServer' });
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
    expect(required('topicForest/setApiKeys')).toEqual(['keys']);
    expect(required('topicForest/testModel')).toEqual([]);
  });

  it('chat attachments are an array of the Attachment shape, at most 20', () => {
    expect(t.methods['topicForest/chat']!.params.attachments).toMatchObject(
      { type: 'Attachment[]', required: false, maxItems: 20 });
    expect(t.methods['topicForest/chat']!.params.retryOf).toMatchObject({ type: 'integer' });
    expect(t.methods['topicForest/chat']!.result).toMatchObject(
      { attachments: 'AttachmentRef[]', model: 'string' });
    expect(t.methods['topicForest/threadsChanged']!.params.threadId).toMatchObject({ nullable: true });
  });

  it('error codes match', () => {
    expect(ErrorCodes).toEqual(t.errors);
  });
});

const PYTHON = join(process.cwd(), '../../.venv/bin/python');
const GENERATED = join(process.cwd(), 'src/protocol.ts');

it('the checked-in table is what the server exports now', { skip: existsSync(PYTHON) && table ? false : 'no repo .venv' }, () => {
  const live = execFileSync(PYTHON, ['-m', 'topicforest.server.codegen', '--json'], { encoding: 'utf8' });
  expect(JSON.parse(live)).toEqual(table);
});

it('src/protocol.ts is what the generator makes from the table now', { skip: existsSync(PYTHON) ? false : 'no repo .venv' }, () => {
  const live = execFileSync(PYTHON, ['-m', 'topicforest.server.codegen', '--ts'], { encoding: 'utf8' });
  expect(readFileSync(GENERATED, 'utf8')).toEqual(live);
});

it('finds the server table in the repo', () => {
  expect({ TABLE, exists: existsSync(TABLE) }).toEqual({ TABLE, exists: true });
});
