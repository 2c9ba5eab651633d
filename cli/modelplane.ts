// The admin CLI as a program of its own, for the images: `kubectl exec deploy/<release>-operator --
// node dist/cli/modelplane.js <command>` runs it inside the cluster with the operator's REDIS_URL,
// MODELPLANE_KEK and DATABASE_URL, so no checkout, `npm install` or port-forward is needed
// (docs/install.md "The admin CLI in the cluster"). From a checkout, `npx modelplane` (bin.mjs).
import { main } from './main.ts';

process.exitCode = await main(process.argv.slice(2));
