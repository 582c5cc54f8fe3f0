// The routes the server registers, read from src/server/routes/*.ts (`app.get(PATH, …)`), so a
// table test over "every route" can check that it lists each one: a route added without a row fails.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { A2A_PATH } from "../../src/server/agent-card.js";
import { APPROVALS_PATH } from "../../src/server/routes/approvals.js";
import { AG_UI_PATH } from "../../src/server/routes/ag-ui.js";
import { CHAT_PATH } from "../../src/server/routes/chat-completions.js";
import { STUDIO_PATH } from "../../src/server/routes/studio.js";
import { UI_CHAT_PATH } from "../../src/server/routes/ui-chat.js";

const CONSTANTS: Record<string, string> = { A2A_PATH, AG_UI_PATH, APPROVALS_PATH, CHAT_PATH, STUDIO_PATH, UI_CHAT_PATH };
const folder = join(import.meta.dirname, "../../src/server/routes");

/** `METHOD /path` of every route registered in src/server/routes (path parameters as `:name`). */
export function registeredRoutes(): string[] {
  const routes: string[] = [];
  for (const file of readdirSync(folder).filter((name) => name.endsWith(".ts"))) {
    const source = withoutMutantSwitches(readFileSync(join(folder, file), "utf8"));
    for (const [, method, expression] of source.matchAll(/\bapp\.(get|post|put|patch|delete|all)\(\s*([^,]+),/g)) {
      routes.push(`${method.toUpperCase()} ${pathOf(expression.trim(), file)}`);
    }
  }
  return routes.sort();
}

/**
 * The source as written, where `npm run mutation` has put a string behind a mutant switch
 * (`stryMutAct_x("7") ? "" : (stryCov_x("7"), "/v1/sessions")`): a sandbox's sources are instrumented.
 */
function withoutMutantSwitches(source: string): string {
  return source.replace(/stryMutAct_\w+\("\d+"\) \? (?:""|``) : \(stryCov_\w+\("\d+"\), ("[^"]*"|`[^`]*`)\)/g, "$1");
}

/** A route's path from its source: a string literal, an exported constant, or a template of one. */
function pathOf(expression: string, file: string): string {
  const literal = /^"([^"]*)"$/.exec(expression);
  if (literal) return literal[1];
  if (expression in CONSTANTS) return CONSTANTS[expression];
  const template = /^`\$\{(\w+)\}([^`$]*)`$/.exec(expression);
  if (template && template[1] in CONSTANTS) return CONSTANTS[template[1]] + template[2];
  throw new Error(`${file}: cannot read the route path ${expression}; add its constant to test/server/registered-routes.ts`);
}
