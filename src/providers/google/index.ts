// `agentloop/google`: the native Google Gemini adapter (`generateContent` / `streamGenerateContent`).
export { type GoogleOptions, type GoogleProviderData, GoogleModel, geminiContents, geminiUsage, google } from "./gemini.js";
