import { describe, it } from 'node:test';
import { expect } from 'expect';
import { statusBarItems } from '../mocks/vscode';
import { BudgetStatus, budgetText, budgetTooltip } from '../../src/statusBar';

describe('status bar', () => {
  it('formats used/max', () => {
    expect(budgetText(0, 1024)).toBe('$(layers) 0/1k');
    expect(budgetText(950, 4096)).toBe('$(layers) 950/4.1k');
    expect(budgetText(12_400, 16_000)).toBe('$(layers) 12k/16k');
    expect(budgetTooltip(512, 1024, { sent: 3, noRoom: 0 })).toBe('Topic Forest: the next request carries ' +
      '512 of 1024 history tokens (50%): 3 topics and the current thread\'s recent messages. Click to show topics.');
    expect(budgetTooltip(1000, 1024, { sent: 1, noRoom: 2 })).toContain(
      '1 topic and the current thread\'s recent messages; 2 topics left out for lack of room.');
    expect(budgetTooltip(10, 1024)).toContain('10 of 1024 history tokens (1%): topics and');
  });

  it('says a new thread starts with the workspace\'s topics rather than looking full', () => {
    const fresh = budgetTooltip(2040, 2048, { sent: 7, noRoom: 2, topicTokens: 2031, threadMessages: 0 });
    expect(fresh).toBe('Topic Forest: a new thread starts with the workspace\'s topics: 7 topics, 2031 tokens; ' +
      '2 topics left out for lack of room. Its next request carries 2040 of 2048 history tokens (100%); its own ' +
      'messages join them as you chat, within the same budget. Click to show topics.');
    expect(budgetTooltip(2040, 2048, { sent: 7, noRoom: 0, topicTokens: 1500, threadMessages: 4 }))
      .toContain('7 topics and the current thread\'s recent messages.');
  });

  it('shows the pending attachments beside the history figure, not in it', () => {
    const status = new BudgetStatus();
    const item = statusBarItems.at(-1)!;
    status.attachments(300); // before any listing: kept for it
    status.update(1587, 2048, { sent: 3, noRoom: 0, topicTokens: 900, threadMessages: 4 });
    expect(item.text).toBe('$(layers) 1.6k/2k +300');
    expect(item.tooltip).toBe('Topic Forest: the next request carries 1587 of 2048 history tokens (77%): 3 topics ' +
      'and the current thread\'s recent messages. + 300 tokens of attachments with the next message (estimated; ' +
      'outside the history budget). Click to show topics.');
    status.attachments(0);
    expect(item.text).toBe('$(layers) 1.6k/2k');
    expect(item.tooltip).not.toContain('attachments');
  });

  it('updates, focuses the topic tree on click, and turns into a restart button on failure', () => {
    const status = new BudgetStatus();
    const item = statusBarItems.at(-1)!;
    expect(item.command).toBe('topicForest.topics.focus');
    status.update(700, 1024, { sent: 2, noRoom: 0 });
    expect(item.text).toBe('$(layers) 700/1k');
    status.serverState('failed');
    expect(item.text).toBe('$(warning) Topic Forest');
    expect(item.command).toBe('topicForest.restartServer');
    status.serverState('running');
    expect(item.command).toBe('topicForest.topics.focus');
  });
});
