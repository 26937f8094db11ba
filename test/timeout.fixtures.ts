/**
 * Classes for test/pass-timeout.test.ts; worker threads import this module
 * (options.modules: [TIMEOUT_FIXTURES]) and find the classes by name.
 */
import { isMainThread } from 'node:worker_threads';
import { f32, object, u32 } from '../runtime/index.js';

export const TIMEOUT_FIXTURES = import.meta.url;

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

export class Spinner extends object({ count: u32, x: f32, mark: u32 }) {
  /** Never returns. */
  forever(): void {
    for (;;) this.x += 1;
  }

  /**
   * Never returns on a worker thread; returns on the calling thread — once a worker has
   * started on an object of this pass (its mark is `token`), so that a worker surely has
   * blocks (the calling thread would otherwise often take them all first), but at most
   * after `waitMs`.
   */
  foreverOnWorkers(token: number, waitMs: number): void {
    if (isMainThread) {
      waitForMark(this, token, waitMs);
      this.count += 1;
      return;
    }
    this.mark = token;
    for (;;) this.x += 1;
  }

  /**
   * As foreverOnWorkers, but a worker first creates one Spinner: the first allocation of a
   * warp reserves a slot for each lane left in it (the allocator's warp coalescing), so the
   * stuck worker holds a warp cache when it is terminated.
   */
  createThenForeverOnWorkers(token: number, waitMs: number): void {
    if (isMainThread) {
      waitForMark(this, token, waitMs);
      this.count += 1;
      return;
    }
    this.runtime.create(Spinner);
    this.mark = token;
    for (;;) this.x += 1;
  }

  /** Never returns on the calling thread; on a worker thread returns once the calling thread has started (as above). */
  foreverOnMain(token: number, waitMs: number): void {
    if (!isMainThread) {
      waitForMark(this, token, waitMs);
      this.count += 1;
      return;
    }
    this.mark = token;
    for (;;) this.x += 1;
  }

  /** Counts a visit; a worker thread also leaves `token` as the mark, which the calling thread waits for (bounded). */
  visit(token: number, waitMs: number): void {
    if (isMainThread) waitForMark(this, token, waitMs);
    else this.mark = token;
    this.count += 1;
  }

  /** An init method of parallelNew that never returns. */
  hang(_index: number): void {
    for (;;) this.x += 1;
  }

  inc(): void {
    this.count += 1;
  }
}

/** Wait (bounded) until some Spinner of the pass carries `token` as its mark. */
function waitForMark(self: Spinner, token: number, waitMs: number): void {
  const until = performance.now() + waitMs;
  for (;;) {
    let seen = false;
    self.runtime.deviceDo(Spinner, (s) => (seen ||= s.mark === token));
    if (seen || performance.now() > until) return;
    Atomics.wait(sleepCell, 0, 0, 2);
  }
}
