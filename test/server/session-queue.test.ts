// The per-session queue behind the server: one task at a time per session, sessions side by side.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SessionQueue } from "../../src/server/session-queue.js";

const tick = () => new Promise((resolve) => setImmediate(resolve));

test("a session's tasks run one after the other (a failure does not stop the next); other sessions run meanwhile; the queue empties", async () => {
  const queue = new SessionQueue();
  const order: string[] = [];
  let releaseFirst!: () => void;
  const first = queue.run("a", async () => {
    order.push("a1 start");
    await new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    order.push("a1 end");
    throw new Error("first failed");
  });
  const second = queue.run("a", async () => {
    order.push("a2");
    return 2;
  });
  const other = queue.run("b", async () => {
    order.push("b1");
    return "b";
  });
  await tick();
  assert.deepEqual(order, ["a1 start", "b1"], "a2 waits for a1; b1 does not");
  assert.equal(await other, "b");
  releaseFirst();
  await assert.rejects(first, /first failed/);
  assert.equal(await second, 2);
  assert.deepEqual(order, ["a1 start", "b1", "a1 end", "a2"]);
  await tick();
  assert.equal(queue.size, 0);
});

test("a task that throws synchronously gives a rejected promise, and the session's next task still runs", async () => {
  const queue = new SessionQueue();
  const failing = queue.run("a", (() => {
    throw new TypeError("sync failure");
  }) as () => Promise<never>);
  await assert.rejects(failing, /sync failure/);
  assert.equal(await queue.run("a", async () => "next"), "next");
});

test("a task queued behind one that ended waits for the task still running, not only for the first", async () => {
  const queue = new SessionQueue();
  const order: string[] = [];
  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    return { open, opened };
  };
  const [first, second] = [gate(), gate()];
  const one = queue.run("a", async () => {
    await first.opened;
    order.push("a1 end");
  });
  const two = queue.run("a", async () => {
    order.push("a2 start");
    await second.opened;
    order.push("a2 end");
  });
  first.open();
  await one;
  await tick();
  assert.deepEqual(order, ["a1 end", "a2 start"]);
  assert.equal(queue.size, 1, "a2 still runs");
  const three = queue.run("a", async () => {
    order.push("a3");
  });
  await tick();
  assert.deepEqual(order, ["a1 end", "a2 start"], "a3 waits for a2");
  second.open();
  await Promise.all([two, three]);
  assert.deepEqual(order, ["a1 end", "a2 start", "a2 end", "a3"]);
});
