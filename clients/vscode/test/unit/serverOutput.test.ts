import { describe, it } from 'node:test';
import { expect } from 'expect';
import { fn } from 'jest-mock';
import type * as vscode from 'vscode';
import { serverOutput } from '../../src/serverOutput';

function fakeLog() {
  const entries: string[] = [];
  const at = (level: string) => fn((text: string) => { entries.push(`[${level}] ${text}`); });
  const log = { name: 'Topic Forest', debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'),
    show: fn(), hide: fn(), clear: fn(), replace: fn(), dispose: fn() };
  return { entries, log, channel: serverOutput(log as unknown as vscode.LogOutputChannel) };
}

describe('the language client\'s output, into the log channel', () => {
  it('stderr chunks: one entry per line at its level, no blank entries, no second timestamp', () => {
    const { entries, channel } = fakeLog();
    channel.append('2026-11-23 23:44:00,393 INFO topicforest.memory: memory opened\n');
    channel.append('2026-11-23 23:44:01,000 WARNING topicforest.x: slow\n2026-11-23 23:44:02,000 ERR');
    channel.append('OR topicforest.y: failed\nTraceback (most recent call last):\n  File "x.py", line 1\n\n');
    channel.append('a pip line without the format\n');
    expect(entries).toEqual([
      '[info] topicforest.memory: memory opened',
      '[warn] topicforest.x: slow',
      '[error] topicforest.y: failed',
      '[error] Traceback (most recent call last):',
      '[error]   File "x.py", line 1',
      '[error] a pip line without the format',
    ]);
  });

  it('the client\'s messages and window/logMessage: the level kept, the "[Info - time]" prefix gone', () => {
    const { entries, channel } = fakeLog();
    channel.appendLine('[Info  - 11:44:00 PM] topicforest.server.workspaces: workspace memory opened');
    channel.appendLine('[Error - 11:44:21 PM] Server process exited with code 0.');
    channel.appendLine('[Warn  - 11:44:22 PM] two\nlines');
    channel.appendLine('plain');
    expect(entries).toEqual([
      '[info] topicforest.server.workspaces: workspace memory opened',
      '[error] Server process exited with code 0.',
      '[warn] two\nlines',
      '[info] plain',
    ]);
  });

  it('show/clear go to the log channel; disposing the client leaves the channel open', () => {
    const { log, channel } = fakeLog();
    channel.show(true);
    channel.clear();
    channel.dispose();
    expect(log.show).toHaveBeenCalledWith(true);
    expect(log.clear).toHaveBeenCalled();
    expect(log.dispose).not.toHaveBeenCalled();
  });
});
