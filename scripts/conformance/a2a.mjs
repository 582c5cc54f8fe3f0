// Runs the A2A TCK (github.com/a2aproject/a2a-tck) against a local `agentloop serve` (127.0.0.1 only):
// the 0.3 mandatory categories (branch 0.3.x) and the 1.0 requirements of every level (branch 1.0-dev), over
// JSON-RPC, the transport agentloop serves. The TCK is not part of this repository: point
// A2A_TCK_DIR at a git clone of it. Its Python dependencies go into a virtual environment.
//
//   A2A_TCK_DIR=~/src/a2a-tck node scripts/conformance/a2a.mjs
//
// Settings (environment): A2A_TCK_DIR (required), A2A_TCK_REF_0_3 (default origin/0.3.x),
// A2A_TCK_REF_1_0 (default origin/1.0-dev), A2A_TCK_VERSIONS (default "0.3,1.0"),
// A2A_TCK_LEVELS (1.0's requirement levels, default "must,should,may"), A2A_TCK_PYTHON (default:
// /usr/bin/python3 when present, else python3), A2A_TCK_VENV (default: a folder in the temp dir),
// A2A_TCK_KEEP=1 (keep the scratch folder with the JUnit reports). Prints one JSON line per TCK version,
// {"suite","version","passed","failed","skipped","failures"}, or {"suite","version","skip"} naming
// what is missing.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SUITE = "a2a-tck";
const env = process.env;
const log = (line) => process.stderr.write(`[a2a] ${line}\n`);
const emit = (object) => process.stdout.write(`${JSON.stringify(object)}\n`);

// Python modules the TCK imports (0.3: pyproject of 0.3.x; 1.0: of 1.0-dev, JSON-RPC tests only),
// with the Debian package that provides each where PyPI cannot be reached.
const MODULES = {
  pytest: "python3-pytest",
  pytest_asyncio: "python3-pytest-asyncio",
  httpx: "python3-httpx",
  requests: "python3-requests",
  responses: "python3-responses",
  deepdiff: "python3-deepdiff",
  jsonschema: "python3-jsonschema",
  yaml: "python3-yaml",
  dotenv: "python3-dotenv",
  grpc: "python3-grpcio",
  "google.protobuf": "python3-protobuf",
  OpenSSL: "python3-openssl",
  aiohttp: "python3-aiohttp",
  packaging: "python3-packaging",
  jinja2: "python3-jinja2",
};
const PIP_PACKAGES = ["pytest", "pytest-asyncio", "httpx", "requests", "responses", "deepdiff", "jsonschema", "PyYAML", "python-dotenv", "grpcio", "protobuf", "pyOpenSSL", "aiohttp", "packaging", "Jinja2"];

const versions = (env.A2A_TCK_VERSIONS ?? "0.3,1.0").split(",").map((value) => value.trim()).filter(Boolean);
const skipAll = (reason) => {
  for (const version of versions) emit({ suite: SUITE, version, skip: reason });
  process.exit(0);
};

const tckDir = env.A2A_TCK_DIR;
if (!tckDir) skipAll("A2A_TCK_DIR is not set: clone https://github.com/a2aproject/a2a-tck and point A2A_TCK_DIR at it");
if (!existsSync(join(tckDir, ".git"))) skipAll(`A2A_TCK_DIR=${tckDir} is not a git clone of a2aproject/a2a-tck`);

const run = (command, args, options = {}) => spawnSync(command, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, ...options });

// The virtual environment: system site packages included, so Debian's python3-* packages count.
const python = env.A2A_TCK_PYTHON ?? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3");
const venv = env.A2A_TCK_VENV ?? join(tmpdir(), "agentloop-a2a-tck-venv");
const venvPython = join(venv, "bin", "python");
if (!existsSync(venvPython)) {
  log(`creating the virtual environment ${venv} (${python} -m venv --system-site-packages)`);
  const made = run(python, ["-m", "venv", "--system-site-packages", venv]);
  if (made.status !== 0) skipAll(`cannot create a Python virtual environment with ${python}: ${(made.stderr || made.stdout).trim().split("\n").at(-1)} (Debian: apt-get install python3-venv)`);
}
const missingModules = () =>
  Object.keys(MODULES).filter((module) => run(venvPython, ["-c", `import ${module}`]).status !== 0);
let missing = missingModules();
if (missing.length > 0) {
  log(`installing ${PIP_PACKAGES.join(" ")} into the virtual environment`);
  run(venvPython, ["-m", "pip", "install", "--quiet", ...PIP_PACKAGES], { stdio: ["ignore", "inherit", "inherit"], timeout: 600_000 });
  missing = missingModules();
}
if (missing.length > 0) {
  skipAll(`Python modules missing and not installable here: ${missing.join(", ")} (Debian: apt-get install ${missing.map((module) => MODULES[module]).join(" ")})`);
}

/** A scratch copy of one TCK branch (git archive: the user's clone is not touched). */
function checkout(ref, scratch) {
  for (const candidate of [ref, ref.replace(/^origin\//, "")]) {
    if (run("git", ["-C", tckDir, "rev-parse", "--verify", "--quiet", `${candidate}^{commit}`]).status !== 0) continue;
    const commit = run("git", ["-C", tckDir, "rev-parse", "--short", candidate]).stdout.trim();
    const date = run("git", ["-C", tckDir, "log", "-1", "--format=%cs", candidate]).stdout.trim();
    mkdirSync(scratch, { recursive: true });
    const archive = run("sh", ["-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", tckDir, candidate, scratch]);
    if (archive.status !== 0) throw new Error(`git archive ${candidate} failed: ${archive.stderr}`);
    return { commit, date, ref: candidate };
  }
  return undefined;
}

/**
 * The 1.0 TCK's generated protobuf module needs protobuf ≥ 5.26 (`runtime_version`); with an older
 * protobuf (Debian 12 ships 3.21) it is regenerated with the local protoc from a2a.proto, without
 * the google.api HTTP annotations (options only; they change no message). JSON-RPC tests only read
 * the message types.
 */
function fitProtobuf(dir) {
  if (run(venvPython, ["-c", "from google.protobuf import runtime_version"]).status === 0) return undefined;
  if (run("protoc", ["--version"]).status !== 0) return "the 1.0 TCK needs protobuf >= 5.26 or protoc to regenerate a2a_pb2.py (Debian: apt-get install protobuf-compiler)";
  const source = readFileSync(join(dir, "specification", "a2a.proto"), "utf8");
  let proto = source
    .replace(/^import "google\/api\/[^"]+";\n/gm, "")
    .replace(/\s*\[\(google\.api\.field_behavior\) = [A-Z_]+\]/g, "")
    .replace(/^\s*option \(google\.api\.method_signature\) = "[^"]*";\n/gm, "");
  for (;;) {
    const start = proto.indexOf("option (google.api.http) = {");
    if (start === -1) break;
    let depth = 0;
    let index = proto.indexOf("{", start);
    for (; index < proto.length; index++) {
      if (proto[index] === "{") depth++;
      else if (proto[index] === "}" && --depth === 0) break;
    }
    proto = proto.slice(0, start) + proto.slice(proto.indexOf(";", index) + 1);
  }
  const work = mkdtempSync(join(tmpdir(), "a2a-proto-"));
  writeFileSync(join(work, "a2a.proto"), proto);
  const compiled = run("protoc", [`--proto_path=${work}`, `--python_out=${join(dir, "specification", "generated")}`, join(work, "a2a.proto")]);
  rmSync(work, { recursive: true, force: true });
  return compiled.status === 0 ? undefined : `protoc could not compile a2a.proto: ${compiled.stderr.trim()}`;
}

/**
 * Failures that are not agentloop's to fix, with the reason (checked against each TCK version's
 * source; see the README's Conformance section). Anything else that fails is agentloop's.
 */
const NOT_OURS = [
  [/test_artifacts\.Test(Text|File|FileUrl|Data)Artifact/, "a scenario of the TCK's reference agent (fixed artifacts such as 'Generated text content', output.txt, a data part); a real agent answers its own text"],
  [/test_artifacts\.TestMessageResponse/, "a scenario of the TCK's reference agent (a bare Message reply); agentloop answers every message with a task"],
  [/test_tasks_cancel_valid|test_message_send_continue_task|test_task_history_length|test_core_method_mapping_compliance/, "needs a task still open after a blocking message/send (the TCK's reference agent waits for input); agentloop's task has completed, so cancel/continue are refused as the spec says"],
];

/** pytest's junit XML → counts and the failing test ids. */
function junitCounts(file) {
  const xml = readFileSync(file, "utf8");
  const failures = [];
  let passed = 0;
  let skipped = 0;
  for (const match of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attributes = match[1];
    const body = match[3] ?? "";
    const name = /\bname="([^"]*)"/.exec(attributes)?.[1] ?? "?";
    const classname = /\bclassname="([^"]*)"/.exec(attributes)?.[1] ?? "";
    if (/<(failure|error)\b/.test(body)) failures.push(`${classname}::${name}`.replace(/&quot;/g, '"').replace(/&amp;/g, "&"));
    else if (/<skipped\b/.test(body)) skipped++;
    else passed++;
  }
  return { passed, failed: failures.length, skipped, failures };
}

/** `agentloop serve` on 127.0.0.1 and a free port, with a scripted model; resolves with its URL. */
function startServer(extraEnv) {
  const child = spawn(process.execPath, ["--import", "tsx", join(root, "src/cli/main.ts"), "serve", "--host", "127.0.0.1", "--port", "0", "--json"], {
    cwd: root,
    env: { ...env, DEBUG_MOCK_RESPONSES: JSON.stringify(["Hello from agentloop."]), AGENT_NAME: "agentloop-tck", MEMORY_TYPE: "memory", AGENT_API_KEY: "", ...extraEnv },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolvePromise, reject) => {
    let buffer = "";
    let url;
    // A loaded machine compiles the sources (tsx) slowly; a server that never gets ready is stopped,
    // or it would keep this script alive.
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error("agentloop serve did not get ready within 120 s"));
    }, 120_000);
    child.stdout.on("data", (chunk) => {
      buffer += chunk;
      for (const line of buffer.split("\n")) {
        try {
          const event = JSON.parse(line);
          if (event.event === "ready") {
            clearTimeout(timer);
            resolvePromise({ child, url });
          }
          if (event.event === "listening") url = event.url;
        } catch {
          // not a whole JSON line yet
        }
      }
    });
    child.once("exit", (code) => reject(new Error(`agentloop serve exited with ${code}`)));
  });
}

const scratch = mkdtempSync(join(tmpdir(), "agentloop-a2a-tck-"));
let server;
try {
  for (const version of versions) {
    const ref = version === "0.3" ? (env.A2A_TCK_REF_0_3 ?? "origin/0.3.x") : version === "1.0" ? (env.A2A_TCK_REF_1_0 ?? "origin/1.0-dev") : undefined;
    if (!ref) {
      emit({ suite: SUITE, version, skip: `unknown TCK version "${version}" (use 0.3 or 1.0)` });
      continue;
    }
    const dir = join(scratch, version);
    const source = checkout(ref, dir);
    if (!source) {
      emit({ suite: SUITE, version, skip: `${ref} not found in ${tckDir} (git fetch there, or set A2A_TCK_REF_${version.replace(".", "_")})` });
      continue;
    }
    // The 0.3 TCK, a 0.3 client, fetches the card naming no A2A-Version, as the 1.0 TCK does: each
    // line gets a server whose card for such a client is its own (A2A_CARD_DEFAULT_VERSION).
    server?.child.kill("SIGTERM");
    server = await startServer({ A2A_CARD_DEFAULT_VERSION: version });
    log(`agentloop serve at ${server.url} (A2A_CARD_DEFAULT_VERSION=${version})`);
    const junit = join(scratch, `junit-${version}.xml`);
    let args;
    if (version === "0.3") {
      // What `run_tck.py --category mandatory` runs, with a JUnit report to count from.
      args = ["-m", "pytest", "tests/mandatory/", `--sut-url=${server.url}/a2a`, "--test-scope=all", "--tb=line", "-q", "-p", "no:cacheprovider",
        "-m", "mandatory_jsonrpc or mandatory_protocol", "--transport-strategy", "agent_preferred", "--enable-equivalence-testing", `--junitxml=${junit}`];
    } else {
      const problem = fitProtobuf(dir);
      if (problem) {
        emit({ suite: SUITE, version, skip: problem });
        continue;
      }
      // The 1.0 TCK's own pytest settings without its `minversion = 8.0` (Debian 12 ships pytest 7.2).
      const ini = join(scratch, "pytest-1.0.ini");
      writeFileSync(ini, "[pytest]\nasyncio_mode = auto\nmarkers =\n    core\n    must\n    should\n    may\n    grpc\n    jsonrpc\n    http_json\n    streaming\n    integration\n");
      // Every requirement level the TCK marks (MUST, SHOULD, MAY): the card's caching headers are SHOULD/MAY.
      const levels = (env.A2A_TCK_LEVELS ?? "must,should,may").split(",").map((level) => level.trim()).filter(Boolean).join(" or ");
      // gRPC tests are left out: agentloop serves JSON-RPC only (and they need googleapis-common-protos).
      args = ["-m", "pytest", "-c", ini, "--rootdir=.", "tests/compatibility/", "--ignore=tests/compatibility/grpc", `--sut-host=${server.url}`,
        "--transport=jsonrpc", "-m", levels, "--tb=line", "-q", "-p", "no:cacheprovider", `--junitxml=${junit}`];
    }
    log(`TCK ${version} (${source.ref} ${source.commit}, ${source.date}): ${venvPython} ${args.join(" ")}`);
    const result = run(venvPython, args, { cwd: dir, timeout: 900_000 });
    if (!existsSync(junit)) {
      emit({ suite: SUITE, version, skip: `the TCK did not run: ${(result.stdout + result.stderr).trim().split("\n").slice(-3).join(" | ")}` });
      continue;
    }
    process.stderr.write(result.stdout.split("\n").filter((line) => /AssertionError|FAILED|passed|failed/.test(line)).join("\n") + "\n");
    const counts = junitCounts(junit);
    const failures = counts.failures.map((test) => ({ test, notOurs: NOT_OURS.find(([pattern]) => pattern.test(test))?.[1] }));
    emit({
      suite: SUITE,
      version: `${version} (${source.commit} ${source.date})`,
      passed: counts.passed,
      failed: counts.failed,
      skipped: counts.skipped,
      ours: failures.filter((failure) => !failure.notOurs).length,
      failures,
    });
  }
} catch (error) {
  for (const version of versions) emit({ suite: SUITE, version, skip: `could not run: ${error instanceof Error ? error.message : String(error)}` });
} finally {
  server?.child.kill("SIGTERM");
  if (env.A2A_TCK_KEEP) log(`kept ${scratch} (the TCK checkouts and the JUnit reports junit-<version>.xml)`);
  else rmSync(scratch, { recursive: true, force: true });
}
