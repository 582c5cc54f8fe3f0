import assert from "node:assert/strict";
import { test } from "node:test";
import { isSensitiveKey, REDACTED, redactSensitive, redactText } from "../../src/tracing/index.js";

test("sensitive keys: secrets yes, token counters no", () => {
  for (const key of ["api_key", "apiKey", "x-api-key", "OPENAI_APIKEY", "token", "access_token", "x-auth-token", "password", "db.passwd", "clientSecret", "Authorization", "cookie"]) {
    assert.equal(isSensitiveKey(key), true, key);
  }
  for (const key of ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "max_tokens", "user", "query", "gen_ai.tool.name"]) {
    assert.equal(isSensitiveKey(key), false, key);
  }
});

test("redactSensitive copies deeply and leaves the input untouched", () => {
  const input = { a: 1, auth: { password: "p", list: [{ token: "t" }, "plain"] } };
  assert.deepEqual(redactSensitive(input), { a: 1, auth: { password: REDACTED, list: [{ token: REDACTED }, "plain"] } });
  assert.equal(input.auth.password, "p");
  assert.equal(redactSensitive("text"), "text");
  assert.equal(redactSensitive(null), null);
});

test("redactText handles JSON and free text", () => {
  assert.equal(redactText('{"q":"x","api_key":"sk-1"}'), `{"q":"x","api_key":"${REDACTED}"}`);
  const text = redactText('call with api_key=sk-123 and "password": "hunter2", Authorization: Bearer abc.def');
  for (const secret of ["sk-123", "hunter2", "abc.def"]) assert.equal(text.includes(secret), false, text);
  assert.match(text, /call with api_key=\[REDACTED\]/);
  assert.equal(redactText("nothing secret here"), "nothing secret here");
});
