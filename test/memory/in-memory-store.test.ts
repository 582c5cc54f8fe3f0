import { InMemoryStore } from "../../src/memory/index.js";
import { memoryStoreConformance } from "./conformance.js";

memoryStoreConformance("in-memory", async (limits) => new InMemoryStore(limits));
