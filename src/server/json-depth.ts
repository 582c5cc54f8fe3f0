/**
 * The nesting limit of request bodies. `JSON.parse` itself copes with deep nesting, but everything
 * that walks the value afterwards (validation, the A2A SDK, the stores' copies) recurses, and
 * 100,000 levels overflow the stack. The text is checked before it is parsed.
 */
import { badRequest, type HttpError } from "./http-errors.js";

/** Deepest nesting of arrays and objects a request body may have. */
export const MAX_JSON_DEPTH = 64;

/** The 400 `json_too_deep` for a body nested deeper than `MAX_JSON_DEPTH`, or undefined. One pass over the text, strings skipped. */
export function jsonDepthError(text: string, maxDepth = MAX_JSON_DEPTH): HttpError | undefined {
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 34 /* " */) {
      // Skip the string (escapes included); an unterminated one is JSON.parse's to report.
      for (index++; index < text.length; index++) {
        const inner = text.charCodeAt(index);
        if (inner === 92 /* \ */) index++;
        else if (inner === 34) break;
      }
    } else if (code === 123 /* { */ || code === 91 /* [ */) {
      if (++depth > maxDepth) {
        return badRequest(`the request body nests JSON deeper than ${maxDepth} levels (arrays and objects); flatten it`, null, "json_too_deep");
      }
    } else if (code === 125 /* } */ || code === 93 /* ] */) {
      depth--;
    }
  }
  return undefined;
}
