/**
 * Classes of bench/scaling.ts, in their own module because worker threads import it
 * (options.modules): importing the benchmark script itself would run it again. The
 * linux-scalability classes are the app's (apps/linux-scalability/model.ts).
 */
import { object, u32 } from '../runtime/index.js';

export const SCALING_CLASSES_URL = import.meta.url;

/** The cheapest possible do-all: measures the fork-join itself. */
export class Empty extends object({ x: u32 }) {
  nop(): void {}
}
