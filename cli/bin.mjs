#!/usr/bin/env node
// `npx modelplane ...` from the repo: run the TypeScript CLI through tsx without a build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
process.exitCode = await main(process.argv.slice(2));
