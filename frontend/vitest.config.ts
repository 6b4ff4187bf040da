import { defineConfig } from 'vitest/config';

// The unit tests: pure modules (formatting, the Space Apps card's rules,
// the API client against a fake fetch), run by `npm test` and `make
// check`. The browser tests in tests/ are another runner's (node --test,
// against a real engine in Chromium), so they are not picked up here.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
