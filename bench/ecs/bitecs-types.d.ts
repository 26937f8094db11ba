// bitecs 0.3.34 ships its types (an ambient `declare module 'bitecs'`) at a path its
// package.json "exports" does not name, so NodeNext resolution misses them: load them
// here. An ambient module declaration can only be loaded by a reference, not an import.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="../../node_modules/bitecs/dist/index.d.ts" />
