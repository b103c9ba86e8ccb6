// The package's entry points, as the TypeScript checker sees them: a small root for hosts,
// machine-level names under `rolebox/machines`, the pipeline under `rolebox/pipeline`, test
// helpers under `rolebox/testing`; and package.json pointing each subpath at its build output.
import { readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '..');
const ROOT_NAME_LIMIT = 120;

interface ExportTarget {
  readonly 'rolebox-source': string;
  readonly types: string;
  readonly import: string;
}
interface PackageJson {
  readonly exports: Record<string, ExportTarget | string>;
}
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as PackageJson;
/** The code entry points (`./package.json` is exported as itself, for tools that read it). */
const codeExports = Object.entries(pkg.exports).filter(
  (entry): entry is [string, ExportTarget] => typeof entry[1] !== 'string',
);

/** Each entry point's exported names, with the file each one is declared in. */
function entryExports(): Map<string, Map<string, string[]>> {
  const config = ts.getParsedCommandLineOfConfigFile(join(REPO, 'tsconfig.json'), undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    },
  });
  if (!config) throw new Error('tsconfig.json could not be read');
  const entries = codeExports.map(([subpath, target]) => ({
    subpath,
    file: join(REPO, target['rolebox-source']),
  }));
  const program = ts.createProgram(
    entries.map((entry) => entry.file),
    config.options,
  );
  const checker = program.getTypeChecker();
  const result = new Map<string, Map<string, string[]>>();
  for (const { subpath, file } of entries) {
    const sourceFile = program.getSourceFile(file);
    const moduleSymbol = sourceFile && checker.getSymbolAtLocation(sourceFile);
    if (!moduleSymbol) throw new Error(`${file} is not a module`);
    const names = new Map<string, string[]>();
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      names.set(
        symbol.name,
        (target.declarations ?? []).map((declaration) =>
          relative(REPO, declaration.getSourceFile().fileName).split(sep).join('/'),
        ),
      );
    }
    result.set(subpath, names);
  }
  return result;
}

describe('public API', () => {
  const exports = entryExports();
  const root = exports.get('.')!;

  it(`the root exports fewer than ${ROOT_NAME_LIMIT} names, types included`, () => {
    expect(root.size, [...root.keys()].sort().join(', ')).toBeLessThan(ROOT_NAME_LIMIT);
  });

  it('the root exports no machine, test helper, CLI or inspector, nor the pipeline internals', () => {
    const misplaced = [...root]
      .filter(([, files]) =>
        files.some((file) =>
          /^(machines|inspector)\/|^src\/(testing|cli|persistence\/(journal|persister|check-snapshot))\b|^src\/pipeline\/(registry|scheduler)\.ts$/.test(
            file,
          ),
        ),
      )
      .map(([name, files]) => `${name} (${files.join(', ')})`);
    expect(misplaced).toEqual([]);
  });

  it('keeps the names the README and the examples import from rolebox', () => {
    const readmeNames = [
      'createRolebox',
      'defineFunction',
      'createPipeline',
      'definePipelineTypes',
      'definePolicy',
      'telemetryRecordOf',
      'PIPELINE_ACTION_TYPES',
      'PIPELINE_SOURCE_TYPES',
      'PipelinePolicy',
    ];
    expect(readmeNames.filter((name) => !root.has(name))).toEqual([]);
    const testing = exports.get('./testing')!;
    expect(['formatReplayReport', 'readRunFile', 'replay'].filter((n) => !testing.has(n))).toEqual(
      [],
    );
    expect(exports.get('./inspector')?.has('startInspectorServer')).toBe(true);
    expect(exports.get('./node')?.has('CommandDispatcher')).toBe(true);
    expect(exports.get('./node')?.has('loadFunctions')).toBe(true);
    expect(exports.get('./sqlite')?.has('SqliteSnapshotStore')).toBe(true);
    const ai = exports.get('./ai')!;
    for (const name of [
      'signalTool',
      'loopTool',
      'sessionTools',
      'toolDefinitions',
      'callTool',
      'createMcpServer',
    ])
      expect(ai.has(name), name).toBe(true);
  });

  it('keeps the Node-only adapters out of the root (it bundles for browsers)', () => {
    const nodeOnly = [...root]
      .filter(([, files]) =>
        files.some((file) =>
          /^src\/adapters\/(command-dispatcher|sqlite-snapshot-store|better-sqlite3|process-alive)\.ts$|^src\/function\/load\.ts$/.test(
            file,
          ),
        ),
      )
      .map(([name]) => name);
    expect(nodeOnly).toEqual([]);
  });

  it('puts the machines under rolebox/machines and the pipeline under rolebox/pipeline', () => {
    const machines = exports.get('./machines')!;
    for (const name of [
      'createSystemMachine',
      'createSessionMachine',
      'createFunctionMachine',
      'createLoopMachine',
      'MachineFactories',
      'MachineEnv',
      'loopStateOf',
    ])
      expect(machines.has(name), name).toBe(true);
    const pipeline = exports.get('./pipeline')!;
    for (const name of ['createPipeline', 'defineSourceHandler', 'applyOnce', 'projectRun'])
      expect(pipeline.has(name), name).toBe(true);
    expect(pipeline.has('runChain')).toBe(false);
    expect(pipeline.has('HandlerRegistry')).toBe(false);
  });

  it('points every subpath at its source and at its build output in dist/', () => {
    const build = JSON.parse(readFileSync(join(REPO, 'tsconfig.build.json'), 'utf8')) as {
      include: string[];
    };
    const { compilerOptions } = JSON.parse(readFileSync(join(REPO, 'tsconfig.json'), 'utf8')) as {
      compilerOptions: { rootDir: string; outDir: string };
    };
    // dist/ mirrors the repository: dist/src/index.js is built from src/index.ts.
    expect([compilerOptions.rootDir, compilerOptions.outDir]).toEqual(['.', 'dist']);
    for (const [subpath, target] of codeExports) {
      const source = target['rolebox-source'].replace(/^\.\//, '');
      expect(
        build.include.some((dir) => source.startsWith(`${dir}/`)),
        subpath,
      ).toBe(true);
      const built = `./dist/${source.replace(/\.ts$/, '')}`;
      // `types` first: TypeScript takes the first condition that matches.
      expect(Object.keys(target), subpath).toEqual(['rolebox-source', 'types', 'import']);
      expect(target, subpath).toEqual({
        'rolebox-source': target['rolebox-source'],
        types: `${built}.d.ts`,
        import: `${built}.js`,
      });
    }
    expect(Object.keys(pkg.exports).sort()).toEqual([
      '.',
      './ai',
      './inspector',
      './machines',
      './node',
      './package.json',
      './pipeline',
      './restate',
      './sqlite',
      './testing',
    ]);
  });
});
