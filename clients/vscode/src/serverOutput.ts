// What vscode-languageclient writes to its output channel, into our LogOutputChannel once each:
// the server's stderr comes in chunks (`append`, newline-terminated: each chunk was an entry
// followed by a blank one) and the client's own messages and window/logMessage as
// "[Info  - 11:44:00 PM] text" lines (`appendLine`: a second timestamp beside the channel's).
// Each becomes one entry at its own level, without the extra timestamp.
import type * as vscode from 'vscode';

type Level = 'debug' | 'info' | 'warn' | 'error';

const STDERR_LEVELS: Record<string, Level> = {
  DEBUG: 'debug', INFO: 'info', WARNING: 'warn', ERROR: 'error', CRITICAL: 'error',
};
const CLIENT_LEVELS: Record<string, Level> = {
  Trace: 'debug', Debug: 'debug', Info: 'info', Warn: 'warn', Error: 'error',
};
/** The server's stderr format: "2026-11-23 23:44:00,393 INFO topicforest.memory: text". */
const STDERR_LINE = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ([A-Z]+) (.*)$/;
const CLIENT_LINE = /^\[(\w+)\s*- [^\]]*\] ([\s\S]*)$/;

export function serverOutput(log: vscode.LogOutputChannel): vscode.OutputChannel {
  let partial = '';
  let level: Level = 'info'; // a traceback's lines keep the level of the record they follow
  const write = (lvl: Level, text: string) => log[lvl](text);
  return {
    name: log.name,
    append(value: string) {
      const lines = (partial + value).split(/\r?\n/);
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.trim()) continue;
        const m = STDERR_LINE.exec(line);
        if (m) level = STDERR_LEVELS[m[1] ?? ''] ?? 'info';
        write(level, m ? m[2] ?? '' : line);
      }
    },
    appendLine(value: string) {
      const m = CLIENT_LINE.exec(value);
      write(m ? CLIENT_LEVELS[m[1] ?? ''] ?? 'info' : 'info', m ? m[2] ?? '' : value);
    },
    replace: (value: string) => log.replace(value),
    clear: () => log.clear(),
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- an OutputChannel has both overloads
    show: (...args: unknown[]) => log.show(args.some((a) => a === true)), // (preserveFocus) or (column, preserveFocus)
    hide: () => log.hide(),
    dispose: () => undefined, // the extension owns the channel
  };
}
