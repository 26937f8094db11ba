/**
 * Classes of test/reorder.test.ts, in a module of their own so that worker threads can
 * import them (RuntimeOptions.modules).
 */
import { array, bool, f64, i16, i32, i8, object, ref, u16, u32, u8, type Runtime, type SmmoObject } from '../index.js';

export const REORDER_FIXTURES = import.meta.url;

/** The runtime that Fish.early reorders (set by the test that calls it). */
export const hooks: { current: Runtime | null } = { current: null };

interface CellLike extends SmmoObject {
  id: number;
}
interface AgentLike extends SmmoObject {
  id: number;
}
export class Cell extends object({ id: i32, agent: ref<AgentLike>('Agent') }) {}
export abstract class Agent extends object(
  { id: i32, rank: i16, cell: ref<CellLike>('Cell'), friend: ref<AgentLike>('Agent') },
  { abstract: true },
) {}
export class Fish extends Agent.extend({ w: f64, tags: array(u8, 3) }) {
  /** Calls reorder inside a do-all (refused). */
  early(): void {
    hooks.current!.reorder(Fish, 'cell');
  }
}
export class Shark extends Agent.extend({ prey: array(ref<AgentLike>('Agent'), 2) }) {}
export class Holder extends object({ id: i32, any: ref(() => Agent) }) {}
/** One field of every integer kind reorder orders by (test/reorder.test.ts, "every kind of integer key"). */
export class Keyed extends object({ id: i32, a: i8, b: u8, c: i16, d: u16, e: i32, f: u32, g: bool }) {}
export const CLASSES = [Cell, Agent, Fish, Shark, Holder, Keyed];
