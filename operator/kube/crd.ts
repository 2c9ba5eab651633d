// The Model CRD as this operator serves it: operator/model/crd/ built with the engine kinds'
// names and rules (operator/engines/), which model/ cannot import. Writes crds/model.yaml:
// `npx tsx operator/kube/crd.ts > crds/model.yaml && cp crds/model.yaml charts/modelplane/crds/`.
import { pathToFileURL } from 'node:url';
import { acceptedEngines } from '../engines/index.ts';
import { modelCrd as crdOf, modelCrdYaml as yamlOf } from '../model/crd/crd.ts';

export const modelCrd = () => crdOf(acceptedEngines());
export const modelCrdYaml = () => yamlOf(acceptedEngines());

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.stdout.write(modelCrdYaml());
