import { describe, it } from 'node:test';
import { expect } from 'expect';
import { previewMarkdown, previewUri, topicIdFromUri } from '../../src/preview';
import { Uri, workspace } from '../mocks/vscode';
import { makeTopic } from './fakes';

describe('topic preview document', () => {
  it('round-trips the topic id through the uri', () => {
    const uri = previewUri({ id: 12, title: 'Fix: CI/cache <x>' });
    expect(uri.path).toBe('/Fix CI cache x.md');  // the tab is headed by the title, not "Topic 12"
    expect(topicIdFromUri(uri)).toBe(12);
  });

  it('shows summary and source messages, fenced so they cannot forge structure', () => {
    const md = previewMarkdown(makeTopic({ title: 'T\n# fake heading', pinned: true }), [
      { id: 1, threadId: 't', role: 'user', content: '# not a heading\n```\nx\n```', timestamp: 0,
        tokens: 9, cancelled: false, attachments: [] },
      { id: 2, threadId: 't', role: 'assistant', content: 'answer', timestamp: 60, tokens: 1,
        cancelled: true, attachments: [] },
    ]);
    expect(md.split('\n')[0]).toBe('# T fake heading');
    expect(md).toContain('## Summary\n\n> I asked you about tokenize\\(\\) in lexer\\.py\\.\n');
    expect(md).toContain('pinned');
    expect(md).toContain('## Source messages (2)');
    expect(md).toContain('````markdown\n# not a heading\n```\nx\n```\n````');
    expect(md).toContain('### Assistant · 1970-01-01 00:01 · 1 tokens · cancelled');
    // no line outside a fence starts with "# " except the title
    expect(md.split('\n').filter((l) => l.startsWith('# '))).toEqual(['# T fake heading', '# not a heading']);
  });

  it('renders a summary as plain quoted text: no link, heading or HTML of its own', () => {
    const md = previewMarkdown(makeTopic({ summary: '# h\n[x](command:evil) <img src=x> done.\n\nmore' }), []);
    expect(md).toContain('> \\# h\n> \\[x\\]\\(command:evil\\) \\<img src=x\\> done\\.\n>\n> more');
  });

  it('lists how new messages reshaped the topic', () => {
    const md = previewMarkdown(makeTopic({ reshapes: [{ kind: 'merged', otherId: 3, otherTitle: 'Stripe',
      messages: 4, at: 0 }] }), []);
    expect(md).toContain('Reshaped by new messages:\n\n- 1970\\-01\\-01 00:00: "Stripe" was merged into it\\.');
  });

  it('names files under the workspace folder relative to it', () => {
    workspace.workspaceFolders = [{ uri: Uri.file('/home/me/proj') }];
    try {
      const md = previewMarkdown(makeTopic({ files: ['/home/me/proj/src/app.py', '/usr/lib/python3.11/json/decoder.py'] }), []);
      expect(md).toContain('Files: `src/app.py`, `/usr/lib/python3.11/json/decoder.py`');
    } finally {
      workspace.workspaceFolders = undefined;
    }
  });
});
