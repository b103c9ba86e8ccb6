// The layering of DESIGN §1, checked on the real import graph: every import of every .ts file
// under src/, machines/ and inspector/ (static, dynamic, `export … from`, `import type`,
// `import('…').T`) is resolved with the TypeScript compiler, then each edge is checked against
// the table of what a room may import, and the whole graph against circles.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '..');
const SCANNED_DIRS = ['src', 'machines', 'inspector'] as const;

/** The pure domain, in order: each room may import the rooms before it. */
const DOMAIN = ['signal', 'condition', 'function', 'loop', 'session'] as const;

const ROOMS = [
  'errors',
  'base',
  ...DOMAIN,
  'ports',
  'system',
  'machines',
  'persistence',
  'runtime',
  'adapters',
  'pipeline',
  'rolebox',
  'index',
  'testing',
  'restate',
  'ai',
  'cli',
  'inspector',
] as const;

/**
 * A room of DESIGN §1: a folder with one job (src/errors.ts is a room of one file, `index` the
 * entry files src/index.ts, src/node.ts and src/sqlite.ts).
 */
type Room = (typeof ROOMS)[number];

/** One row of the layering table: the rooms a room may import besides itself, and why. */
interface LayerRule {
  readonly may: readonly Room[];
  readonly why: string;
}

const BELOW_DOMAIN = ['errors', 'base', 'ports'] as const satisfies readonly Room[];
const UP_TO_SYSTEM = [...BELOW_DOMAIN, ...DOMAIN, 'system'] as const satisfies readonly Room[];
const UP_TO_MACHINES = [...UP_TO_SYSTEM, 'machines'] as const satisfies readonly Room[];

function domainRule(room: (typeof DOMAIN)[number]): LayerRule {
  const before = DOMAIN.slice(0, DOMAIN.indexOf(room));
  return {
    may: [...BELOW_DOMAIN, ...before],
    why: `the domain is pure: ${room}/ imports errors, base, ports${before.length > 0 ? ` and the rooms before it (${before.join(', ')})` : ''}`,
  };
}

/** DESIGN §1 as a table. `index` is nobody's dependency: nothing inside the package imports it. */
const LAYERS: Readonly<Record<Room, LayerRule>> = {
  errors: { may: [], why: 'errors is the bottom: it imports nothing of rolebox' },
  base: { may: ['errors'], why: 'base imports only errors' },
  signal: domainRule('signal'),
  condition: domainRule('condition'),
  function: domainRule('function'),
  loop: domainRule('loop'),
  session: domainRule('session'),
  ports: { may: ['errors', 'base'], why: 'ports are contracts: they import only errors and base' },
  system: {
    may: [...BELOW_DOMAIN, ...DOMAIN],
    why: 'system (what the actor system is built from) sits under the machines',
  },
  machines: {
    may: UP_TO_SYSTEM,
    why: 'machines are built from the domain and system/, and perform no I/O',
  },
  persistence: {
    may: UP_TO_MACHINES,
    why: 'persistence sits on the machines, under the facade, and picks no adapter',
  },
  runtime: {
    may: [...UP_TO_MACHINES, 'persistence'],
    why: 'the host runtime sits on the machines and persistence, under the facade',
  },
  adapters: {
    may: ['errors', 'base', 'ports'],
    why: 'adapters implement ports: they import errors, base and ports only',
  },
  pipeline: {
    may: [...BELOW_DOMAIN, ...DOMAIN, 'adapters'],
    why: 'the pipeline never imports the facade, the machines or what is built on them',
  },
  rolebox: {
    may: [...UP_TO_MACHINES, 'persistence', 'runtime', 'adapters', 'pipeline'],
    why: 'the facade is built on everything below it, and on nothing that is built on it',
  },
  index: {
    may: [...UP_TO_MACHINES, 'persistence', 'runtime', 'adapters', 'pipeline', 'rolebox'],
    why: 'the root entry re-exports the host API, not test helpers, the CLI or the inspector',
  },
  testing: {
    may: [...UP_TO_MACHINES, 'persistence', 'runtime', 'adapters', 'pipeline', 'rolebox'],
    why: 'test helpers may use anything but the CLI and the inspector',
  },
  restate: {
    may: [...UP_TO_MACHINES, 'persistence', 'runtime', 'adapters', 'rolebox'],
    why: 'rolebox/restate runs the facade one step at a time inside Restate handlers; nothing below imports it',
  },
  ai: {
    may: [...BELOW_DOMAIN, ...DOMAIN, 'rolebox'],
    why: 'rolebox/ai turns the session handle into tools for agents (AI SDK, MCP): it uses the facade and the domain, nothing below the facade',
  },
  cli: {
    may: [
      ...UP_TO_MACHINES,
      'persistence',
      'runtime',
      'adapters',
      'pipeline',
      'rolebox',
      'testing',
      'restate',
      'ai',
      'inspector',
    ],
    why: 'the CLI may import anything (but the root entry)',
  },
  inspector: {
    may: [...BELOW_DOMAIN, ...DOMAIN, 'adapters'],
    why: 'the inspector reads records: never the facade, the machines or persistence',
  },
};

const ROOM_NAMES: ReadonlySet<string> = new Set(ROOMS);

/** Which room a repository file is in, or a reason it is in none. */
function roomOf(file: string): { room: Room } | { misplaced: string } {
  const parts = file.split('/');
  if (parts[0] === 'machines') return { room: 'machines' };
  if (parts[0] === 'inspector') return { room: 'inspector' };
  if (parts[0] !== 'src') return { misplaced: `${file} is outside src/, machines/ and inspector/` };
  if (parts.length === 2) {
    // The package's entry points: the root, and the Node-only subpaths beside it.
    if (['src/index.ts', 'src/node.ts', 'src/sqlite.ts'].includes(file)) return { room: 'index' };
    if (file === 'src/errors.ts') return { room: 'errors' };
    return { misplaced: `${file} is a loose file at the root of src/: put it in a room` };
  }
  const room = parts[1]!;
  if (ROOM_NAMES.has(room) && room !== 'index' && room !== 'errors') return { room: room as Room };
  return { misplaced: `src/${room}/ is a room the layering table does not know: add a row` };
}

/** A directed import graph: file → the files it imports (repository-relative, `/`-separated). */
type ImportGraph = ReadonlyMap<string, readonly string[]>;

/** One layering violation, as `file → import: why`. */
function layeringViolations(graph: ImportGraph): string[] {
  const violations: string[] = [];
  for (const [file, imports] of graph) {
    const from = roomOf(file);
    if ('misplaced' in from) {
      violations.push(`${file}: ${from.misplaced}`);
      continue;
    }
    const rule = LAYERS[from.room];
    for (const target of imports) {
      const to = roomOf(target);
      if ('misplaced' in to) {
        violations.push(`${file} → ${target}: ${to.misplaced}`);
      } else if (to.room === 'index') {
        violations.push(`${file} → ${target}: nothing inside the package imports the root entry`);
      } else if (to.room !== from.room && !rule.may.includes(to.room)) {
        violations.push(
          `${file} → ${target}: ${from.room}/ may not import ${to.room}/ (${rule.why})`,
        );
      }
    }
  }
  return violations;
}

/** Every circle of the graph, one per strongly connected component, as `a → b → a`. */
function importCycles(graph: ImportGraph): string[] {
  // Tarjan's algorithm, iterative so that a deep chain cannot overflow the stack.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work.at(-1)!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const target = edges[frame.next++]!;
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!));
        }
        continue;
      }
      work.pop();
      const parent = work.at(-1);
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfLoop = (graph.get(frame.node) ?? []).includes(frame.node);
        if (component.length > 1 || selfLoop) components.push(component);
      }
    }
  }
  return components.map((component) => cyclePath(graph, new Set(component)));
}

/** The shortest circle through the first file (in sort order) of one strongly connected component. */
function cyclePath(graph: ImportGraph, component: ReadonlySet<string>): string {
  const start = [...component].sort()[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const target of graph.get(node) ?? []) {
      if (!component.has(target)) continue;
      if (target === start) {
        const between: string[] = [];
        for (let at = node; at !== start; at = previous.get(at)!) between.unshift(at);
        return [start, ...between, start].join(' → ');
      }
      if (!previous.has(target)) {
        previous.set(target, node);
        queue.push(target);
      }
    }
  }
  throw new Error(`no circle through ${start}, yet it is in a strongly connected component`);
}

/** Every module specifier a file names: static, dynamic, re-exports, type-only and `import()` types. */
function moduleSpecifiers(sourceFile: ts.SourceFile): string[] {
  const specifiers: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteralLike(node.moduleSpecifier)
    ) {
      specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      specifiers.push(node.arguments[0].text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteralLike(node.argument.literal)
    ) {
      specifiers.push(node.argument.literal.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteralLike(node.moduleReference.expression)
    ) {
      specifiers.push(node.moduleReference.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return specifiers;
}

function tsFilesUnder(dir: string): string[] {
  return readdirSync(join(REPO, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => `${dir}/${file.split(sep).join('/')}`)
    .sort();
}

/** The repository's import graph, resolved as tsc resolves it; unresolvable relative imports are returned too. */
function repositoryImportGraph(): { graph: ImportGraph; unresolved: string[] } {
  const config = ts.getParsedCommandLineOfConfigFile(join(REPO, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  if (!config) throw new Error('tsconfig.json could not be read');
  const graph = new Map<string, string[]>();
  const unresolved: string[] = [];
  for (const file of SCANNED_DIRS.flatMap(tsFilesUnder)) {
    const absolute = join(REPO, file);
    const sourceFile = ts.createSourceFile(
      absolute,
      readFileSync(absolute, 'utf8'),
      ts.ScriptTarget.Latest,
      true,
    );
    const targets = new Set<string>();
    for (const specifier of moduleSpecifiers(sourceFile)) {
      const { resolvedModule } = ts.resolveModuleName(
        specifier,
        absolute,
        config.options,
        ts.sys,
        undefined,
        undefined,
        ts.ModuleKind.ESNext,
      );
      if (!resolvedModule) {
        if (specifier.startsWith('.')) unresolved.push(`${file} → ${specifier}`);
        continue;
      }
      if (resolvedModule.isExternalLibraryImport) continue;
      const target = relative(REPO, resolvedModule.resolvedFileName).split(sep).join('/');
      if (!target.startsWith('..')) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return { graph, unresolved };
}

describe('architecture (DESIGN §1)', () => {
  const { graph, unresolved } = repositoryImportGraph();

  it('reads the whole tree: every room has files, every relative import resolves', () => {
    expect(unresolved).toEqual([]);
    expect(graph.size).toBeGreaterThan(100);
    const rooms = new Set(
      [...graph.keys()].flatMap((file) => {
        const at = roomOf(file);
        return 'room' in at ? [at.room] : [];
      }),
    );
    // Every room of DESIGN §1 must be seen.
    expect(ROOMS.filter((room) => !rooms.has(room))).toEqual([]);
    const edges = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
    expect(edges).toBeGreaterThan(300);
  });

  it('no import breaks the layering, and no file is outside a room', () => {
    expect(layeringViolations(graph)).toEqual([]);
  });

  it('nothing imports in a circle, not even types', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('sees every kind of import, and reports a layering break and a circle', () => {
    const source = ts.createSourceFile(
      'x.ts',
      [
        "import a from './a.js';",
        "import type { B } from './b.js';",
        "export { c } from './c.js';",
        "export type * from './d.js';",
        "import './e.js';",
        "const f = await import('./f.js');",
        "type G = import('./g.js').G;",
        "import h = require('./h.js');",
      ].join('\n'),
      ts.ScriptTarget.Latest,
      true,
    );
    expect(moduleSpecifiers(source)).toEqual([
      './a.js',
      './b.js',
      './c.js',
      './d.js',
      './e.js',
      './f.js',
      './g.js',
      './h.js',
    ]);

    const bad: ImportGraph = new Map([
      ['src/signal/a.ts', ['src/session/b.ts']],
      ['src/session/b.ts', ['src/signal/a.ts']],
      ['src/pipeline/p.ts', ['src/rolebox/rolebox.ts', 'src/index.ts']],
      ['src/rolebox/rolebox.ts', []],
      ['src/helpers.ts', []],
      ['inspector/server.ts', ['machines/loop.machine.ts']],
      ['machines/loop.machine.ts', ['machines/loop.machine.ts']],
    ]);
    expect(layeringViolations(bad)).toEqual([
      'src/signal/a.ts → src/session/b.ts: signal/ may not import session/ (the domain is pure: signal/ imports errors, base, ports)',
      'src/pipeline/p.ts → src/rolebox/rolebox.ts: pipeline/ may not import rolebox/ (the pipeline never imports the facade, the machines or what is built on them)',
      'src/pipeline/p.ts → src/index.ts: nothing inside the package imports the root entry',
      'src/helpers.ts: src/helpers.ts is a loose file at the root of src/: put it in a room',
      'inspector/server.ts → machines/loop.machine.ts: inspector/ may not import machines/ (the inspector reads records: never the facade, the machines or persistence)',
    ]);
    expect(importCycles(bad).sort()).toEqual([
      'machines/loop.machine.ts → machines/loop.machine.ts',
      'src/session/b.ts → src/signal/a.ts → src/session/b.ts',
    ]);
  });
});

/** The optional peers rolebox/ai works with. */
const OPTIONAL_PEERS = /^(ai|@modelcontextprotocol\/sdk)(\/|$)/;

/**
 * Imports of an optional peer that load it when the importing module loads: a value
 * import (`import { x } from 'ai'`, `export … from`, a side-effect import). `import type`,
 * `import()` types and `await import()` inside a function are fine: the peer is needed
 * only where it is used.
 */
function eagerPeerImports(file: string, sourceFile: ts.SourceFile): string[] {
  const found: string[] = [];
  for (const statement of sourceFile.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    const specifier = statement.moduleSpecifier;
    if (!specifier || !ts.isStringLiteralLike(specifier) || !OPTIONAL_PEERS.test(specifier.text))
      continue;
    // Only `import type` is dropped whole: under verbatimModuleSyntax `import { type X }`
    // stays as `import {} from …`, which loads the module.
    const typeOnly = ts.isImportDeclaration(statement)
      ? statement.importClause?.isTypeOnly === true
      : statement.isTypeOnly;
    if (!typeOnly) found.push(`${file} loads ${specifier.text} when it loads`);
  }
  return found;
}

describe('optional peers', () => {
  it('src/ imports ai and @modelcontextprotocol/sdk for types only (the MCP SDK is loaded when a server is made)', () => {
    const eager = tsFilesUnder('src').flatMap((file) =>
      eagerPeerImports(
        file,
        ts.createSourceFile(file, readFileSync(join(REPO, file), 'utf8'), ts.ScriptTarget.Latest),
      ),
    );
    expect(eager).toEqual([]);
    const probe = ts.createSourceFile(
      'x.ts',
      [
        "import type { Tool } from 'ai';",
        "import { type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';",
        "import { generateText } from 'ai';",
        "export { Client } from '@modelcontextprotocol/sdk/client/index.js';",
        "import 'ai/test';",
        "import { z } from 'zod';",
      ].join('\n'),
      ts.ScriptTarget.Latest,
    );
    expect(eagerPeerImports('x.ts', probe)).toEqual([
      'x.ts loads @modelcontextprotocol/sdk/server/mcp.js when it loads',
      'x.ts loads ai when it loads',
      'x.ts loads @modelcontextprotocol/sdk/client/index.js when it loads',
      'x.ts loads ai/test when it loads',
    ]);
  });
});
