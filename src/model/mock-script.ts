/**
 * Reading a `DEBUG_MOCK_RESPONSES` / `--mock` script strictly. The scripted model reads any text
 * (text that is not JSON is a one-entry script), but text that starts with `[` or `{` was meant
 * as JSON: when it does not parse, the configuration is wrong and the error says where.
 */
import { AgentLoopError } from "../errors.js";

/** Throws a `configuration` error naming `source`, the position and the parse error when `script` looks like JSON but is not. */
export function checkMockScript(script: string, source: string): void {
  const trimmed = script.trimStart();
  if (!trimmed.startsWith("[") && !trimmed.startsWith("{")) return;
  try {
    JSON.parse(script);
  } catch (error) {
    const found = jsonErrorOffset(script);
    const offset = found < 0 ? script.length : found;
    const before = script.slice(0, offset).split("\n");
    const where = `position ${offset} (line ${before.length}, column ${before[before.length - 1]!.length + 1})`;
    // Node's message without its own copy of the text or position.
    const problem = (error as Error).message.replace(/, ".*" is not valid JSON$/s, "").replace(/ in JSON at position \d+.*$/s, "");
    throw new AgentLoopError("configuration", `${source}: not valid JSON at ${where}: ${problem}`, { cause: error });
  }
}

const LITERAL = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;

/**
 * The offset of the first JSON syntax error in `text`, or -1 when it is valid JSON. (Node 20's
 * `JSON.parse` names the position for some errors only.)
 */
export function jsonErrorOffset(text: string): number {
  let index = 0;
  const space = () => {
    while (index < text.length && " \t\n\r".includes(text[index]!)) index++;
  };
  const fail = (): never => {
    throw new JsonSyntaxOffset(index);
  };
  const string = () => {
    index++;
    while (index < text.length) {
      const char = text[index]!;
      if (char === '"') {
        index++;
        return;
      }
      if (char < " ") fail();
      index += char === "\\" ? 2 : 1;
    }
    fail();
  };
  const value = (): void => {
    space();
    const char = text[index];
    if (char === "{" || char === "[") {
      const close = char === "{" ? "}" : "]";
      index++;
      space();
      if (text[index] === close) {
        index++;
        return;
      }
      for (;;) {
        if (char === "{") {
          space();
          if (text[index] !== '"') fail();
          string();
          space();
          if (text[index] !== ":") fail();
          index++;
        }
        value();
        space();
        if (text[index] === ",") index++;
        else if (text[index] === close) {
          index++;
          return;
        } else fail();
      }
    }
    if (char === '"') {
      string();
      return;
    }
    LITERAL.lastIndex = index;
    if (!LITERAL.test(text)) fail();
    index = LITERAL.lastIndex;
  };
  try {
    value();
    space();
    if (index < text.length) fail();
    return -1;
  } catch (error) {
    if (error instanceof JsonSyntaxOffset) return error.offset;
    throw error;
  }
}

class JsonSyntaxOffset {
  constructor(readonly offset: number) {}
}
