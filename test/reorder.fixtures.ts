/**
 * Classes of test/reorder.test.ts, in a module of their own so that worker threads can
 * import them (RuntimeOptions.modules).
 */
import { array, f64, i16, i32, object, ref, u8, type Runtime, type SmmoObject } from '../index.js';

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
export const CLASSES = [Cell, Agent, Fish, Shark, Holder];
