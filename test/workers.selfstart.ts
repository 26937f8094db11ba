/**
 * A class module that (wrongly) creates a runtime when it is imported: worker threads
 * import it to find Probe, and must refuse to start a runtime there (a runtime per
 * worker, each with its own workers, would be a thread explosion).
 */
import { Probe } from './workers.fixtures.js';

export { Probe };

const { createRuntime } = await import('../index.js');
export const rt = await createRuntime({ classes: [Probe], threads: 2, heap: '4MB', modules: [import.meta.url] });
