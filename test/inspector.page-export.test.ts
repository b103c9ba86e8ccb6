import { describe, expect, it } from 'vitest';
import { chartFromConfig } from '../inspector/chart.js';
import { activeChartStateIds, chartToMermaid } from '../inspector/chart-export.js';
// @ts-expect-error: the page's modules are plain JavaScript without type declarations.
import * as page from '../inspector/page/export.js';
import { machineChart } from '../src/cli/commands/chart.js';

describe("the inspector page's Mermaid export", () => {
  for (const machine of ['function', 'session', 'loop'] as const) {
    it(`equals the CLI's chartToMermaid for the ${machine} chart, with and without active states`, () => {
      const chart = machineChart(machine);
      expect(page.chartToMermaid(chart)).toBe(chartToMermaid(chart));
      const leaf = chart.root.children.at(-1)?.key ?? '';
      const active = activeChartStateIds(chart, leaf);
      expect(page.activeStateIds(chart, leaf)).toEqual(active);
      expect(page.chartToMermaid(chart, active)).toBe(chartToMermaid(chart, active));
      expect(page.chartToMermaid(chart, active)).toContain('class ');
    });
  }

  it('escapes labels the same way (quotes, semicolons, braces)', () => {
    const chart = chartFromConfig(
      JSON.stringify({
        id: 'odd',
        initial: 'a',
        states: { a: { on: { 'go;"now"': { target: 'b', guard: '{g}' } } }, b: { type: 'final' } },
      }),
    );
    if (!chart) throw new Error('no chart');
    expect(page.chartToMermaid(chart)).toBe(chartToMermaid(chart));
  });
});
