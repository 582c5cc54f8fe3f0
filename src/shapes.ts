/**
 * Objects kept for their shape only: one instance, made when its module loads, of each class the
 * loop makes per model call or per run.
 *
 * V8's optimized code embeds the maps (hidden classes) it was specialized for, as weak references.
 * An object literal's map is held by its allocation site; a class instance's map is a transition
 * from its constructor's initial map, held only by the objects that have it. So when the last call's
 * objects die, a full collection at an idle moment (V8's memory reducer, a server between requests)
 * frees those maps and throws away every optimized function that embedded one ("embedded weak objects
 * cleared" in `--trace-deopt`), node's own stream and HTTP code included where it saw our objects:
 * the next calls run in baseline code and optimize again. One live instance with the same map keeps
 * the map, and the code, alive. bench/FINDINGS.md, session 24: scenario 1's JSON call counted right
 * after such a collection.
 *
 * An instance kept here holds no caller's data (made from placeholders, never used), and it must
 * pass through the same property stores as a real one, in the same order, with values of the same
 * representation (a number field that holds fractions gets a fraction here: a whole number first
 * would give it another map), or it keeps a map nothing else uses.
 */
const kept: object[] = [];

/** Keeps `object` alive for the life of the process; returns it. */
export function keepShape<T extends object>(object: T): T {
  kept.push(object);
  return object;
}

/**
 * The latest of each kind no placeholder can stand for, replaced by the next: node's own objects
 * (a response from node:http holds its request and its socket's, whose maps node's stream and HTTP
 * code embeds). A response kept here was read to its end or given up by then.
 */
export const latest: { response: object | undefined } = { response: undefined };
