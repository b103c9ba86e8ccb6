import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it, vi } from 'vitest';
import { chartFromConfig } from '../inspector/chart.js';
import {
  activeChartStateIds,
  chartEdgeLabel,
  chartToMermaid,
  chartToSvg,
} from '../inspector/chart-export.js';
import { machineChart } from '../src/cli/commands/chart.js';
import { PROCESS_TEST_TIMEOUT_MS } from './support/processes.js';

vi.setConfig({ testTimeout: PROCESS_TEST_TIMEOUT_MS, hookTimeout: PROCESS_TEST_TIMEOUT_MS });

const CHROMIUM = '/usr/bin/chromium';
const OUTPUT = join(import.meta.dirname, '..', 'test-output');

interface Box {
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

const inside = (inner: Box, outer: Box) =>
  inner.left >= outer.left - 0.5 &&
  inner.right <= outer.right + 0.5 &&
  inner.top >= outer.top - 0.5 &&
  inner.bottom <= outer.bottom + 0.5;

const overlaps = (a: Box, b: Box) =>
  a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

/** The Mermaid ids a text declares (`state "x" as id`) and those its transitions use. */
function mermaidIds(text: string) {
  const declared = new Set([...text.matchAll(/^\s*state "[^"]*" as (\w+)$/gm)].map((m) => m[1]));
  const blocks = [...text.matchAll(/^\s*state (\w+) \{$/gm)].map((m) => m[1] as string);
  const used = [...text.matchAll(/^\s*(\[\*\]|\w+) --> (\[\*\]|\w+)(?: : (.+))?$/gm)].map((m) => ({
    source: m[1] as string,
    target: m[2] as string,
    label: m[3],
  }));
  return { declared, blocks, used };
}

/**
 * Checks that `text` is well-formed XML as far as an SVG of ours goes: one root, every tag
 * closed in order, attributes quoted, no stray `<` or `&`. Returns the text content.
 */
function checkXml(text: string): string[] {
  const stack: string[] = [];
  const texts: string[] = [];
  const body = text.replace(/<\?xml[^>]*\?>/, '').trim();
  const token = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let match: RegExpExecArray | null;
  let roots = 0;
  let at = 0;
  while (at < body.length) {
    token.lastIndex = at;
    match = token.exec(body);
    if (!match) throw new Error(`not XML at ${at}: ${body.slice(at, at + 60)}`);
    at = token.lastIndex;
    const [, closing, name, , selfClosing, content] = match;
    if (content !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos);)/.test(content)) throw new Error(`bare & in ${content}`);
      if (stack.length === 0 && content.trim() !== '') throw new Error('text outside the root');
      if (content.trim() !== '') texts.push(content.replace(/&lt;/g, '<').replace(/&amp;/g, '&'));
      continue;
    }
    if (closing) {
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open}>`);
    } else if (!selfClosing) {
      if (stack.length === 0) roots += 1;
      stack.push(name as string);
    } else if (stack.length === 0) roots += 1;
  }
  if (stack.length > 0) throw new Error(`unclosed: ${stack.join(' > ')}`);
  if (roots !== 1) throw new Error(`${roots} root elements`);
  return texts;
}

describe('chartToMermaid', () => {
  it('draws the function machine: its states, initial and final markers, every transition', () => {
    const chart = machineChart('function');
    const text = chartToMermaid(chart);
    expect(text.startsWith('stateDiagram-v2\n')).toBe(true);
    const { declared, blocks, used } = mermaidIds(text);
    for (const key of ['activating', 'active', 'gated', 'complete'])
      expect(text).toContain(`state "${key}" as function_${key}`);
    expect(blocks).toEqual(['function']);
    expect(text).toContain('[*] --> function_activating');
    expect(text).toContain('function_complete --> [*]');
    expect(text).toContain('function_active --> function_gated : fn.signal [isPausingSignal]');
    expect(text).toContain('function_gated --> function_active : fn.resume [resumeOpensGate]');
    // Every id a transition names is a declared state.
    for (const { source, target } of used)
      for (const id of [source, target]) if (id !== '[*]') expect(declared).toContain(id);
    expect(used.filter((edge) => edge.label !== undefined)).toHaveLength(chart.edges.length);
    expect(text).not.toContain('classDef');
  });

  it('puts the active states of a state value in the active class', () => {
    const chart = machineChart('session');
    const active = activeChartStateIds(chart, { waiting_user: 'approve_step' });
    expect(active).toEqual([
      'session',
      'session.waiting_user',
      'session.waiting_user.approve_step',
    ]);
    const text = chartToMermaid(chart, active);
    expect(text).toContain('classDef active');
    expect(text).toContain(
      'class session,session_waiting_user,session_waiting_user_approve_step active',
    );
    const { declared, blocks } = mermaidIds(text);
    expect(blocks).toEqual(['session', 'session_waiting_user']);
    for (const id of ['session_idle', 'session_running', 'session_done', 'session_error'])
      expect(declared).toContain(id);
  });

  it('skips the keys of a state value the chart does not have', () => {
    const chart = machineChart('function');
    expect(activeChartStateIds(chart, 'gone')).toEqual(['function']);
    expect(activeChartStateIds(chart, 'gated')).toEqual(['function', 'function.gated']);
  });

  it('keeps quotes and semicolons of a label out of the Mermaid syntax', () => {
    const chart = chartFromConfig(
      JSON.stringify({
        id: 'odd',
        initial: 'a',
        states: { a: { on: { 'go;"now"': 'b' } }, b: { type: 'final' } },
      }),
    );
    if (!chart) throw new Error('no chart');
    expect(chartToMermaid(chart)).toContain('odd_a --> odd_b : go  now ');
  });
});

describe('chartToSvg', () => {
  it('is well-formed XML with every state name and transition label as text', async () => {
    const chart = machineChart('loop');
    const svg = await chartToSvg(chart);
    const texts = checkXml(svg);
    const keys = (node: typeof chart.root): string[] => [
      node.key || node.id,
      ...node.children.flatMap(keys),
    ];
    for (const key of keys(chart.root)) expect(texts).toContain(key);
    for (const edge of chart.edges) expect(texts).toContain(chartEdgeLabel(edge));
    expect(svg).not.toContain('class="state atomic active"');
    expect(svg).toContain('class="state atomic final"');
    expect(svg).toContain('class="initial"');
  });

  it('highlights the active states', async () => {
    const chart = machineChart('function');
    const svg = await chartToSvg(chart, activeChartStateIds(chart, 'gated'));
    checkXml(svg);
    expect(svg).toMatch(/<g class="state atomic active" data-state-id="function\.gated"/);
    expect(svg).toMatch(/<g class="state compound active" data-state-id="function"/);
    expect(svg.match(/ active"/g)).toHaveLength(2);
  });

  it('escapes what XML would read as markup', async () => {
    const chart = chartFromConfig(
      JSON.stringify({
        id: 'odd',
        initial: 'a<b',
        states: { 'a<b': { on: { 'x&y': 'c' } }, c: {} },
      }),
    );
    if (!chart) throw new Error('no chart');
    const texts = checkXml(await chartToSvg(chart));
    expect(texts).toContain('a<b');
    expect(texts).toContain('x&y');
  });

  it('in Chromium: no two sibling states overlap and every label lies inside its box', async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
    const chart = machineChart('session');
    const svg = await chartToSvg(chart, activeChartStateIds(chart, { waiting_user: 'intake' }));
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    try {
      const page = await browser.newPage();
      await page.setContent(`<!doctype html><body style="margin:0">${svg}</body>`);
      await mkdir(OUTPUT, { recursive: true });
      await page.locator('svg').screenshot({ path: join(OUTPUT, 'chart-session.png') });
      const states = await page.locator('g.state').evaluateAll((groups) =>
        groups.map((group) => {
          const box = (element: typeof group | null) => {
            const rect = element?.getBoundingClientRect();
            return (
              rect && { left: rect.left, right: rect.right, top: rect.top, bottom: rect.bottom }
            );
          };
          return {
            id: group.getAttribute('data-state-id') ?? '',
            box: box(group.querySelector('rect.box')),
            label: box(group.querySelector('text')),
            dot: box(group.querySelector('circle')),
          };
        }),
      );
      const svgBox = await page.locator('svg').boundingBox();
      if (!svgBox) throw new Error('no picture');
      const picture: Box = {
        left: svgBox.x,
        right: svgBox.x + svgBox.width,
        top: svgBox.y,
        bottom: svgBox.y + svgBox.height,
      };
      const found: string[] = [];
      for (const state of states) {
        if (!state.box || !state.label) throw new Error(`${state.id} has no box or label`);
        if (!inside(state.label, state.box)) found.push(`label of ${state.id} clipped`);
        if (state.dot && !inside(state.dot, state.box)) found.push(`dot of ${state.id} outside`);
        if (state.dot && overlaps(state.dot, state.label))
          found.push(`dot of ${state.id} on its label`);
      }
      for (const a of states)
        for (const b of states) {
          // A compound state contains its children; only unrelated states must not meet.
          if (a.id >= b.id || b.id.startsWith(`${a.id}.`) || a.id.startsWith(`${b.id}.`)) continue;
          if (a.box && b.box && overlaps(a.box, b.box)) found.push(`${a.id} overlaps ${b.id}`);
        }
      const edgeLabels = await page.locator('g.edge text').evaluateAll((texts) =>
        texts.map((text) => {
          const rect = text.getBoundingClientRect();
          return {
            text: text.textContent ?? '',
            left: rect.left,
            right: rect.right,
            top: rect.top,
            bottom: rect.bottom,
          };
        }),
      );
      for (const label of edgeLabels)
        if (!inside(label, picture)) found.push(`edge label ${label.text} outside the picture`);
      const problems = { found, states: states.length };
      expect(problems.found).toEqual([]);
      expect(problems.states).toBe(13);
    } finally {
      await browser.close();
    }
  });
});
