import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig, type Plugin } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

const outDir = 'dist';

// keepPlaceholder empties dist/ except dist/.placeholder, which is tracked
// in git so that go:embed has something to embed before the first build.
// Vite's own emptyOutDir would delete it, so that is off.
function keepPlaceholder(): Plugin {
  return {
    name: 'senclaw-keep-placeholder',
    apply: 'build',
    buildStart() {
      let names: string[] = [];
      try {
        names = readdirSync(outDir);
      } catch {
        return;
      }
      for (const name of names) {
        if (name !== '.placeholder') rmSync(join(outDir, name), { recursive: true, force: true });
      }
    },
  };
}

// favicon puts the app's own icon (build/linux/icons, the one the desktop
// entry and the tray use) into the build as favicon.png, and serves it
// under `npm run dev` too.
function favicon(): Plugin {
  const icon = () => readFileSync(join(__dirname, '..', 'build', 'linux', 'icons', '32x32.png'));
  return {
    name: 'senclaw-favicon',
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: 'favicon.png', source: icon() });
    },
    configureServer(server) {
      server.middlewares.use('/favicon.png', (_req, res) => {
        res.setHeader('Content-Type', 'image/png');
        res.end(icon());
      });
    },
  };
}

// The build lands in dist/, which frontend/embed.go embeds into the binary.
export default defineConfig({
  plugins: [svelte(), keepPlaceholder(), favicon()],
  base: '/',
  build: {
    outDir,
    emptyOutDir: false,
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    // `npm run dev` proxies the API to a running `senclaw serve`.
    proxy: { '/api': 'http://127.0.0.1:7878' },
  },
});
