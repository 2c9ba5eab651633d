// Where an engine downloads its weights: a size-limited scratch volume, not the container's
// writable layer. Without it a 140 GB download lands on the node's root disk and can fill it for
// every pod there; with it the kubelet evicts only this pod when it outgrows the limit, and the
// Model shows the eviction. The cache variables of each downloader point into it (Hugging Face
// Hub for vLLM, SGLang and TEI; llama.cpp's own for --hf-repo) unless the Model sets them.
// Weights that survive a restart need a cache volume (not here yet: issue 31 "Weights once").
import type { V1Container, V1Volume } from '@kubernetes/client-node';
import type { EngineSpec } from '../model/spec.ts';

export const SCRATCH_MOUNT = '/scratch';
/** Fits a 70B model in 16-bit weights (about 140 GB) with room to spare. */
export const DEFAULT_SCRATCH_SIZE = '200Gi';

const cacheEnv: Record<string, string> = {
  HF_HOME: `${SCRATCH_MOUNT}/hf`,
  // TEI's image sets HUGGINGFACE_HUB_CACHE=/data, which HF_HOME alone would not move.
  HUGGINGFACE_HUB_CACHE: `${SCRATCH_MOUNT}/hf/hub`,
  LLAMA_CACHE: `${SCRATCH_MOUNT}/llama.cpp`,
};

/** For engines that download weights at start (EngineKind.downloadsWeights; the caller asks). */
export function withScratch(engine: EngineSpec, container: V1Container, volumes: V1Volume[]): V1Volume[] {
  const own = new Set((container.env ?? []).map((e) => e.name));
  container.env = [
    ...(container.env ?? []),
    ...Object.entries(cacheEnv)
      .filter(([name]) => !own.has(name))
      .map(([name, value]) => ({ name, value })),
  ];
  container.volumeMounts = [...(container.volumeMounts ?? []), { name: 'scratch', mountPath: SCRATCH_MOUNT }];
  return [
    ...volumes,
    { name: 'scratch', emptyDir: { sizeLimit: engine.scratchSize ?? DEFAULT_SCRATCH_SIZE } },
  ];
}
