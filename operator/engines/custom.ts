// Any OpenAI-compatible server in an image of the admin's choosing: we only know its port. Its
// image downloads nothing we know of (no scratch volume) and has no drain flag we know.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineKind,
  type EngineTemplate,
  engineContainer,
  tcpProbe,
} from './types.ts';

const defaults: EngineDefaults = { image: '', port: 8000, gpus: 0 };

function template(input: EngineInput): EngineTemplate {
  return {
    container: engineContainer(input, {
      // The CRD requires an image for custom engines; '' only reaches here from hand-built objects.
      image: input.engine.image ?? defaults.image,
      ...(input.engine.args ? { args: input.engine.args } : {}),
      startupProbe: tcpProbe(10, 180),
      readinessProbe: tcpProbe(5, 3),
      livenessProbe: tcpProbe(10, 6),
    }),
  };
}

export const custom: EngineKind = {
  type: 'custom',
  defaults,
  template,
  rules: [
    {
      cel: 'has(self.engine.image)',
      message: 'a custom engine needs spec.engine.image',
      holds: (engine) => engine.image !== undefined,
    },
  ],
};
