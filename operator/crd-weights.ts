// The Model CRD's weights fields (issue 31 "Weights once"): spec.engine.weights, kept apart from
// operator/crd.ts so each file holds one part of the schema. Bounds mirror weights/spec.ts.
import { type Schema, str } from './crd-schema.ts';
import { weightsImmutableRule } from './rules.ts';
import { CACHE_PROFILE_PATTERN, RELATIVE_PATH_PATTERN, S3_URL_PATTERN } from './weights/spec.ts';

const secretKey = (description: string): Schema => ({
  type: 'object',
  required: ['name', 'key'],
  description,
  properties: { name: str({ minLength: 1, maxLength: 253 }), key: str({ minLength: 1, maxLength: 253 }) },
});

/** spec.engine.weights. */
export const engineWeightsProperties: Record<string, Schema> = {
  weights: {
    type: 'object',
    required: ['source'],
    description:
      'Where the weights come from; with cacheProfile a loader Job copies them once onto the profile’s shared volume, mounted read-only by every engine pod. Immutable.',
    'x-kubernetes-validations': [{ rule: weightsImmutableRule.cel, message: weightsImmutableRule.message }],
    properties: {
      source: {
        type: 'object',
        description: 'Exactly one of huggingFace, pvc, s3.',
        properties: {
          huggingFace: {
            type: 'object',
            required: ['repo'],
            properties: {
              repo: str({
                pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$',
                maxLength: 256,
              }),
              revision: str({
                minLength: 1,
                maxLength: 128,
                description: 'Branch, tag or commit (default main).',
              }),
              tokenSecret: secretKey('HF_TOKEN from this Secret key, for gated or private repos.'),
            },
          },
          pvc: {
            type: 'object',
            required: ['claimName'],
            properties: {
              claimName: str({ minLength: 1, maxLength: 253 }),
              path: str({
                pattern: RELATIVE_PATH_PATTERN,
                maxLength: 1024,
                description: 'Folder inside the claim.',
              }),
            },
          },
          s3: {
            type: 'object',
            required: ['url', 'credentialsSecret'],
            properties: {
              url: str({ pattern: S3_URL_PATTERN, maxLength: 2048, description: 's3://bucket/prefix' }),
              endpoint: str({
                pattern: '^https?://',
                maxLength: 2048,
                description: 'An S3-compatible endpoint (MinIO, Ceph, R2); unset: AWS.',
              }),
              region: str({ minLength: 1, maxLength: 64 }),
              credentialsSecret: {
                type: 'object',
                required: ['name'],
                description: 'A Secret with keys accessKeyId and secretAccessKey.',
                properties: { name: str({ minLength: 1, maxLength: 253 }) },
              },
            },
          },
        },
      },
      cacheProfile: str({
        pattern: CACHE_PROFILE_PATTERN,
        maxLength: 63,
        description: 'A profile of the chart values engines.cacheProfiles: load once onto its shared volume.',
      }),
      file: str({
        pattern: RELATIVE_PATH_PATTERN,
        maxLength: 1024,
        description: 'The file the engine opens inside the weights (llama.cpp’s GGUF).',
      }),
    },
  },
};

/** `kubectl get models` shows the WeightsCached reason: Loading, Cached, LoadFailed, … */
export const weightsColumn = {
  name: 'Weights',
  type: 'string',
  jsonPath: '.status.conditions[?(@.type=="WeightsCached")].reason',
};
