// ESLint flat config: typescript-eslint's recommended rules (syntax-only, no type
// information, so `npm run lint` stays fast); formatting is prettier's job.
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', 'wasm/target/', 'bench-results/', 'coverage/', '.carry/', '.gl/', '.stryker-tmp/', 'reports/']),
  tseslint.configs.recommended,
  {
    rules: {
      // `_name` marks a parameter or binding that is unused on purpose.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
);
