// Bundles code that imports rolebox the way a browser app's bundler would (esbuild, platform
// browser), resolving `rolebox` to this checkout's sources, and reports every Node built-in
// the bundle would need, with the chain of imports that reached it.
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';

const REPO = join(import.meta.dirname, '..', '..');
const BUILTINS = new Set([...builtinModules, ...builtinModules.map((name) => `node:${name}`)]);

/** A bundle, and each Node built-in it asked for with the file that imported it. */
export interface BrowserBundle {
  readonly code: string;
  readonly nodeBuiltins: readonly string[];
  /** The repository files the bundle is made of (relative paths). */
  readonly inputs: readonly string[];
}

/** Bundles `source` (an ES module) for a browser page; never fails on a built-in, it lists them. */
export async function bundleForBrowser(source: string): Promise<BrowserBundle> {
  const nodeBuiltins: string[] = [];
  const catchBuiltins: Plugin = {
    name: 'node-builtins',
    setup(builder) {
      builder.onResolve({ filter: /.*/ }, (args) => {
        if (!BUILTINS.has(args.path)) return undefined;
        nodeBuiltins.push(`${args.path} (imported by ${args.importer.replace(`${REPO}/`, '')})`);
        return { path: args.path, external: true };
      });
    },
  };
  const result = await build({
    stdin: { contents: source, resolveDir: REPO, loader: 'ts', sourcefile: 'app.ts' },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    conditions: ['rolebox-source'],
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [catchBuiltins],
  });
  return {
    code: result.outputFiles[0]?.text ?? '',
    nodeBuiltins,
    inputs: Object.keys(result.metafile.inputs).filter((file) => /^(src|machines)\//.test(file)),
  };
}
