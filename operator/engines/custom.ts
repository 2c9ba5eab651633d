// Any OpenAI-compatible server in an image of the admin's choosing: we only know its port.
import {
  type EngineDefaults,
  type EngineInput,
  type EngineTemplate,
  engineContainer,
  tcpProbe,
} from './types.ts';

export const customDefaults: EngineDefaults = { image: '', port: 8000, gpus: 0 };

export function customTemplate(input: EngineInput): EngineTemplate {
  return {
    container: engineContainer(input, {
      // The CRD requires an image for custom engines; '' only reaches here from hand-built objects.
      image: input.engine.image ?? customDefaults.image,
      ...(input.engine.args ? { args: input.engine.args } : {}),
      startupProbe: tcpProbe(10, 180),
      readinessProbe: tcpProbe(5, 3),
      livenessProbe: tcpProbe(10, 6),
    }),
  };
}
