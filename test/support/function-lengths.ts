import ts from 'typescript';

/** One function as {@link functionLengths} measured it. */
export interface MeasuredFunction {
  /** The file it is in, as given. */
  readonly file: string;
  /**
   * Its name: declared (`runChain`, `KeptStore.putActor`), else the variable or property it
   * is assigned to (`const guard = () => …` is `guard`), else `<anonymous>`; a function
   * nested in a named one is `outer/inner`.
   */
  readonly name: string;
  /** Its first line (1-based). */
  readonly line: number;
  /** Lines from its first (the declaration, not its leading comment) to its last, both counted. */
  readonly lines: number;
  /**
   * A statechart configuration: a function whose name is `create…Machine` and whose body
   * calls `createMachine` (XState's `setup(…).createMachine(…)` or `createMachine(…)`).
   */
  readonly machineFactory: boolean;
}

/**
 * Every function in a TypeScript or JavaScript source with a body — declarations, methods,
 * constructors, accessors, arrow functions and function expressions — with its length in lines.
 */
export function functionLengths(file: string, text: string): MeasuredFunction[] {
  const kind = file.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found: MeasuredFunction[] = [];
  const visit = (node: ts.Node, outer: string | undefined) => {
    let within = outer;
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const own = nameOf(node, source);
      const name = outer === undefined ? own : `${outer}/${own}`;
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({
        file,
        name,
        line: first + 1,
        lines: last - first + 1,
        machineFactory: /^create\w*Machine$/.test(own) && callsCreateMachine(node.body as ts.Node),
      });
      within = name;
    }
    ts.forEachChild(node, (child) => visit(child, within));
  };
  visit(source, undefined);
  return found;
}

function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  const className = (owner: ts.Node | undefined) =>
    owner && ts.isClassLike(owner) && owner.name ? `${owner.name.text}.` : '';
  if (ts.isConstructorDeclaration(node)) return `${className(node.parent)}constructor`;
  if (node.name !== undefined) return `${className(node.parent)}${node.name.getText(source)}`;
  const parent = node.parent;
  if (
    (ts.isVariableDeclaration(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isPropertyDeclaration(parent)) &&
    parent.name !== undefined
  )
    return parent.name.getText(source);
  return '<anonymous>';
}

function callsCreateMachine(body: ts.Node): boolean {
  let found = false;
  const visit = (node: ts.Node) => {
    if (found) return;
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isPropertyAccessExpression(callee)
        ? callee.name.text
        : ts.isIdentifier(callee)
          ? callee.text
          : undefined;
      if (name === 'createMachine') found = true;
    }
    ts.forEachChild(node, visit);
  };
  visit(body);
  return found;
}
