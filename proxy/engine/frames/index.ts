// The door of the engine-frames room: engine chat completions (streamed frames and whole answers)
// as engines send them, and the usage they report. Engines speak OpenAI's chat completions with
// their own fields and field orders (vLLM, SGLang, llama.cpp; the recorded ones in
// ./real-frames.fixture.ts and test/proxy/engine-streams.ts), so reading them is the engine side's
// business, not a client dialect's: the dialects' translators, the relay and billing take what
// this door gives — a frame read (DeltaReader), the client's frame cut from the engine's
// (relayFrame), the usage reported (StreamUsage, usageFromEngine) — and never step over an engine
// frame's bytes themselves. What stays behind the door (./members.ts's byte stepping and key
// table, the shape learning of ./delta-frame.ts, where each engine puts its cached tokens) is
// held there by test/layout/layout.test.ts.
export { type CompletionOut, completionFast, completionSlow } from './answer.ts';
export {
  type ChunkView,
  clientChunk,
  type FrameView,
  frameView,
  type ModelFields,
  modelFieldsOf,
  relayFrame,
} from './chunks.ts';
export { type DeltaFrame, DeltaReader } from './delta-frame.ts';
export { estimatedUsage, estimateTokens, usageFromEngine } from './reported-usage.ts';
export { type FastFrame, StreamUsage } from './stream-usage.ts';
