// The console's web app: `vite build` (from console/web) writes dist/, which the console server
// serves. Tests build it once per change of its sources (test/helpers/console-web.ts).
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: new URL('.', import.meta.url).pathname,
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true },
  logLevel: 'warn',
});
