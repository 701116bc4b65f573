import { describe, it } from 'node:test';
import { expect } from 'expect';
import { statusBarItems } from '../mocks/vscode';
import { BudgetStatus, budgetText, budgetTooltip } from '../../src/statusBar';

describe('status bar', () => {
  it('formats used/max', () => {
    expect(budgetText(0, 1024)).toBe('$(layers) 0/1k');
    expect(budgetText(950, 4096)).toBe('$(layers) 950/4.1k');
    expect(budgetText(12_400, 16_000)).toBe('$(layers) 12k/16k');
    expect(budgetTooltip(512, 1024, 3)).toContain('512 of 1024 history tokens (50%) from 3 topics');
  });

  it('updates, focuses the topic tree on click, and turns into a restart button on failure', () => {
    const status = new BudgetStatus();
    const item = statusBarItems.at(-1)!;
    expect(item.command).toBe('topicForest.topics.focus');
    status.update(700, 1024, 2);
    expect(item.text).toBe('$(layers) 700/1k');
    status.serverState('failed');
    expect(item.text).toBe('$(warning) Topic Forest');
    expect(item.command).toBe('topicForest.restartServer');
    status.serverState('running');
    expect(item.command).toBe('topicForest.topics.focus');
  });
});
