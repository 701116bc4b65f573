import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { spyOn, mocked } from 'jest-mock';
import * as vscode from 'vscode';
import { clearAllMocks, registeredCommands, workspace as fakeWorkspace } from '../mocks/vscode';
import { TOPIC_ACTIONS, TopicCommands, topicIdOf } from '../../src/commands';
import { ErrorCodes } from '../../src/protocol';
import { TopicTreeProvider } from '../../src/topicTree';
import { FakeConnection, makeTopic } from './fakes';

function setup(handler?: ConstructorParameters<typeof FakeConnection>[0]) {
  const conn = new FakeConnection(handler ?? (() => ({ topic: makeTopic(), messages: [] })));
  const tree = new TopicTreeProvider(conn, () => 'thread');
  const refresh = spyOn(tree, 'refresh');
  const subs = new TopicCommands(conn, tree).register();
  return { conn, tree, refresh, subs };
}

const node = { kind: 'topic' as const, topic: makeTopic({ id: 42 }) };

describe('topic commands', () => {
  beforeEach(() => {
    registeredCommands.clear();
    clearAllMocks();
  });

  for (const [command, method, params] of [
    ['topicForest.dropTopic', 'topicForest/dropTopic', { topicId: 42 }],
    ['topicForest.restoreTopic', 'topicForest/restoreTopic', { topicId: 42 }],
    ['topicForest.pinTopic', 'topicForest/pinTopic', { topicId: 42, threadId: 'thread', pinned: true }],
    ['topicForest.unpinTopic', 'topicForest/pinTopic', { topicId: 42, threadId: 'thread', pinned: false }],
    ['topicForest.expandTopic', 'topicForest/expandTopic', { topicId: 42, threadId: 'thread' }],
    ['topicForest.collapseTopic', 'topicForest/collapseTopic', { topicId: 42 }],
  ] as const) {
    it(`${command} sends ${method} ${JSON.stringify(params)} and refreshes the tree`, async () => {
      const { conn, refresh } = setup();
      await registeredCommands.get(command)?.(node);
      expect(conn.sent).toEqual([{ method, params, token: undefined }]);
      expect(refresh).toHaveBeenCalledWith(0);
    });
  }

  it('registers every topic action plus preview, copy and refresh', () => {
    setup();
    expect([...registeredCommands.keys()].sort()).toEqual([...Object.keys(TOPIC_ACTIONS),
      'topicForest.copySummary', 'topicForest.previewTopic', 'topicForest.refreshTopics'].sort());
  });

  it('accepts a message node or a bare id, ignores no argument', () => {
    expect(topicIdOf(3)).toBe(3);
    expect(topicIdOf({ kind: 'message', topicId: 5, message: {} as never })).toBe(5);
    expect(topicIdOf(undefined)).toBeUndefined();
  });

  it('copy summary puts the summary on the clipboard', async () => {
    const { conn } = setup(() => ({ topic: makeTopic({ summary: 'I asked about X' }), messages: [] }));
    await registeredCommands.get('topicForest.copySummary')?.(node);
    expect(conn.sent[0]).toMatchObject({ method: 'topicForest/previewTopic', params: { topicId: 42 } });
    expect(vscode.env.clipboard.writeText).toHaveBeenCalledWith('I asked about X');
  });

  it('copy summary explains a pending summary instead of copying nothing', async () => {
    setup(() => ({ topic: makeTopic({ summary: null }), messages: [] }));
    await registeredCommands.get('topicForest.copySummary')?.(node);
    expect(vscode.env.clipboard.writeText).not.toHaveBeenCalled();
    expect(vscode.window.showInformationMessage).toHaveBeenCalledWith(expect.stringContaining('no summary yet'));
  });

  it('preview opens a read-only topicforest-preview document named by its title', async () => {
    setup();
    await registeredCommands.get('topicForest.previewTopic')?.(node);
    const uri = mocked(vscode.workspace.openTextDocument).mock.calls[0]?.[0] as unknown as vscode.Uri;
    expect(uri.scheme).toBe('topicforest-preview');
    expect(uri.query).toBe('id=42');
    expect(uri.path).toBe(`/${node.topic.title.replace(/[^\w .-]+/g, ' ').replace(/\s+/g, ' ').trim()}.md`);
    expect(uri.path).not.toContain('Topic 42');
    expect(vscode.commands.executeCommand).toHaveBeenCalledWith('markdown.showPreview', uri);  // rendered
    expect(vscode.window.showTextDocument).not.toHaveBeenCalled();
  });

  it('preview shows the document itself where no Markdown preview is available', async () => {
    setup();
    mocked(vscode.commands.executeCommand).mockImplementationOnce(() => Promise.reject(new Error('command not found')));
    await registeredCommands.get('topicForest.previewTopic')?.(node);
    expect(vscode.window.showTextDocument).toHaveBeenCalled();
    expect(vscode.window.showErrorMessage).not.toHaveBeenCalled();
  });

  it('an expand that does not fit whole, or pushes topics out, says so', async () => {
    const topic = makeTopic({ id: 42, title: 'Parser errors', expanded: true, messageCount: 18 });
    const other = makeTopic({ id: 7, title: 'Rate limit' });
    const { tree } = setup((method) => method === 'topicForest/listTopics'
      ? { topics: [topic, other], budget: 1024, used: 10, threadId: 'thread', rendered: [], omittedTopics: [] }
      : { topic, messages: new Array(11).fill({}), pushedOut: [7] });
    await tree.getChildren();
    await registeredCommands.get('topicForest.expandTopic')?.(node);
    expect(vscode.window.showInformationMessage).toHaveBeenCalledWith(
      'The next request carries 11 of the 18 original messages of "Parser errors" (its opening question ' +
      'first): no room for more. No room left in the next request for "Rate limit".');
  });

  it('an expand that fits whole and pushes nothing out says nothing', async () => {
    setup(() => ({ topic: makeTopic({ expanded: true, messageCount: 2 }), messages: [{}, {}], pushedOut: [] }));
    await registeredCommands.get('topicForest.expandTopic')?.(node);
    expect(vscode.window.showInformationMessage).not.toHaveBeenCalled();
  });

  it('a message row opens the same preview tab as the menu\'s Preview (one topic, one tab)', async () => {
    const topic = makeTopic({ id: 42, title: 'Parser errors' });
    const { tree } = setup((method) => method === 'topicForest/listTopics'
      ? { topics: [topic], budget: 1024, used: 10, threadId: 'thread', rendered: [], omittedTopics: [] }
      : { topic, messages: [] });
    await tree.getChildren(); // the tree has listed the topic
    const opened = () => mocked(vscode.workspace.openTextDocument).mock.calls
      .map(([uri]) => (uri as unknown as vscode.Uri).toString());
    // a message row passes the bare topic id, as preview links do
    await registeredCommands.get('topicForest.previewTopic')?.(42);
    await registeredCommands.get('topicForest.previewTopic')?.({ kind: 'topic', topic, placement: { kind: 'noRoom' } });
    expect(opened()).toHaveLength(2);
    expect(opened()[0]).toBe(opened()[1]);
    expect(opened()[0]).toContain('/Parser errors.md');
  });

  it('an open preview is reused even after its topic was retitled', async () => {
    setup();
    const open = { uri: vscode.Uri.from({ scheme: 'topicforest-preview', path: '/Old title.md', query: 'id=42' }) };
    fakeWorkspace.textDocuments.push(open);
    try {
      await registeredCommands.get('topicForest.previewTopic')?.(node);
      expect(mocked(vscode.workspace.openTextDocument).mock.calls[0]?.[0]).toBe(open.uri);
    } finally {
      fakeWorkspace.textDocuments.pop();
    }
  });

  it('an unknown topic shows the error, what to do, and refreshes', async () => {
    const { refresh } = setup(() => Promise.reject(Object.assign(new Error('unknown topic 42'),
      { code: ErrorCodes.UnknownTopic })));
    await registeredCommands.get('topicForest.dropTopic')?.(node);
    expect(vscode.window.showErrorMessage).toHaveBeenCalledWith(
      expect.stringMatching(/unknown topic 42.*refreshed/));
    expect(refresh).toHaveBeenCalled();
  });

  it('an error action button runs its command', async () => {
    mocked(vscode.window.showErrorMessage).mockResolvedValueOnce('Restart Server');
    setup(() => Promise.reject(new Error('The Topic Forest server is not running.')));
    await registeredCommands.get('topicForest.pinTopic')?.(node);
    expect(vscode.commands.executeCommand).toHaveBeenCalledWith('topicForest.restartServer');
  });
});
