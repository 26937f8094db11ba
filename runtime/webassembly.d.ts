/**
 * The part of the WebAssembly JS API that smmo uses. @types/node 20 does not declare
 * it and the DOM lib would bring the whole browser in; this is the standard's shape.
 */
declare namespace WebAssembly {
  interface MemoryDescriptor {
    initial: number;
    maximum?: number;
    shared?: boolean;
  }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer | SharedArrayBuffer;
    grow(delta: number): number;
  }
  class Module {
    constructor(bytes: BufferSource);
    static imports(module: Module): { module: string; name: string; kind: string }[];
    static exports(module: Module): { name: string; kind: string }[];
  }
  class Global {
    value: number;
  }
  type ExportValue = ((...args: number[]) => number) | Memory | Global;
  type Exports = Record<string, ExportValue>;
  class Instance {
    constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
    readonly exports: Exports;
  }
  function validate(bytes: BufferSource): boolean;
  function compile(bytes: BufferSource): Promise<Module>;
}
