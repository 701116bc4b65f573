// The chat view says whether it is visible, so "Open Chat" is not offered while it is open.
import { beforeEach, describe, it } from 'node:test';
import { expect } from 'expect';
import { fn, mocked } from 'jest-mock';
import * as vscode from 'vscode';
import { clearAllMocks, EventEmitter } from '../mocks/vscode';
import { ChatViewProvider } from '../../src/chatViewProvider';
import { CONTEXT_KEYS } from '../../src/topicsView';

const chatVisible = (): unknown[] => mocked(vscode.commands.executeCommand).mock.calls
  .filter(([c, key]) => c === 'setContext' && key === CONTEXT_KEYS.chatVisible).map(([, , value]): unknown => value);

function resolved() {
  const visibility = new EventEmitter<void>();
  const disposed = new EventEmitter<void>();
  const view = {
    visible: true,
    webview: {
      options: {}, html: '', cspSource: 'vscode-resource:',
      asWebviewUri: (uri: vscode.Uri) => uri,
      onDidReceiveMessage: fn(),
    },
    onDidChangeVisibility: visibility.event,
    onDidDispose: disposed.event,
  };
  const controller = { attach: fn(), handle: fn(() => Promise.resolve()), reportError: fn() };
  new ChatViewProvider(vscode.Uri.file('/ext'), controller).resolveWebviewView(view as never);
  return { view, visibility, disposed, controller };
}

describe('the chat view', () => {
  beforeEach(() => clearAllMocks());

  it('sets topicForest.chatVisible as it is shown, hidden and closed', () => {
    const { view, visibility, disposed, controller } = resolved();
    expect(chatVisible()).toEqual([true]);
    view.visible = false;
    visibility.fire();
    view.visible = true;
    visibility.fire();
    expect(chatVisible()).toEqual([true, false, true]);
    disposed.fire();
    expect(chatVisible()).toEqual([true, false, true, false]);
    expect(controller.attach).toHaveBeenLastCalledWith(undefined);
  });
});
