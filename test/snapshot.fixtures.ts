/**
 * Classes for test/snapshot.test.ts (worker threads import this module by URL and find
 * the classes by name). A pass over Probe creates and deletes Marks and, inside the
 * same pass, walks every Mark with deviceDo, recording what it saw in its own fields.
 */
import { threadId } from 'node:worker_threads';
import { f64, i32, object, ref } from '../runtime/index.js';

export const FIXTURES = import.meta.url;

/** Mark.tag of a Mark that existed before the running pass. */
export const OLD = 1;
/** Mark.tag of a Mark created by a method during a pass. */
export const NEW = 2;

/** Probe.probe modes (bits). */
export const CREATE = 1;
export const DELETE = 2;

/**
 * Objects of the class that the Probe pass does not visit, but looks at with deviceDo.
 * (`weight` is unused: it makes Mark, the smallest class, large enough that a block
 * has room for one Probe's ten 16-byte-aligned arrays; layout.ts.)
 */
export class Mark extends object({ tag: i32, weight: f64 }) {}

export class Probe extends object({
  victim: ref<Mark>('Mark'), // a Mark this Probe deletes in its pass, or null
  seen: i32, // Marks visited by deviceDo inside the pass
  seenNew: i32, // … of them with tag NEW (created during a pass: must be 0)
  seenVictim: i32, // … of them with this Probe's victim's handle (deleted before: must be 0)
  deleted: i32, // 1: this Probe deleted its victim before walking
  child: i32, // 1: created during a pass (must never be visited by that pass)
  visits: i32, // times this Probe was visited
  thread: i32, // threadId of the thread that visited it last
  order: i32, // visits made by this thread before this one (in every pass so far)
}) {
  /**
   * What `mode` says (CREATE: a Mark and a Probe; DELETE: this Probe's victim), then
   * walk the Marks: the pass-start view must contain neither the Marks created during
   * the pass (by any thread) nor the victim. Creating and deleting in one pass is only
   * race-free on one thread: elsewhere a walk may read a slot that another thread
   * freed and filled again meanwhile (a user-level race, not a snapshot fault).
   */
  probe(mode: number): void {
    const ctx = this.runtime;
    this.visits++;
    this.thread = threadId;
    this.order = visitsOnThisThread++;
    if (this.child !== 0) return; // visited in a later pass: nothing more to do
    if ((mode & CREATE) !== 0) {
      ctx.create(Mark).tag = NEW;
      ctx.create(Probe).child = 1;
    }
    const victim = this.victim;
    let vh = 0; // the handle of the Mark deleted here, if any
    if ((mode & DELETE) !== 0 && victim !== null) {
      vh = victim.handle;
      ctx.destroy(victim);
      this.victim = null;
      this.deleted = 1;
    }
    let seen = 0;
    let seenNew = 0;
    let seenVictim = 0;
    ctx.deviceDo(Mark, (m) => {
      seen++;
      if (m.tag === NEW) seenNew++;
      if (m.handle === vh) seenVictim++;
    });
    this.seen = seen;
    this.seenNew = seenNew;
    this.seenVictim = seenVictim;
  }

  /** Walk the Marks only (a pass that creates and deletes nothing). */
  look(): void {
    let seen = 0;
    this.runtime.deviceDo(Mark, () => {
      seen++;
    });
    this.seen = seen;
  }
}

/** Probe visits on this thread so far (Probe.order). */
let visitsOnThisThread = 0;

export const CLASSES = [Mark, Probe];
