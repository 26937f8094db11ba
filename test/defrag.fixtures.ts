/**
 * Classes, a heap builder and the heap-bytes comparison for test/defrag-parallel.test.ts and
 * test/webgpu-defrag.test.ts (the generator and shapes also for test/defrag.test.ts): a module
 * of its own, without tests, because the worker threads of a runtime import the module that
 * exports its classes (options.modules). References across classes and subclasses, inline arrays of references
 * and of numbers, 1-, 4- and 8-byte fields.
 */
import { array, f32, f64, i32, object, ref, u8, type Runtime, type SmmoObject } from '../index.js';

export const DEFRAG_FIXTURES = import.meta.url;

export interface AgentLike extends SmmoObject {
  id: number;
  friend: AgentLike | null;
}
export interface SharkLike extends AgentLike {
  energy: number;
}
export interface FishLike extends AgentLike {
  w: number;
}
export abstract class Agent extends object({ id: i32, friend: ref<AgentLike>('Agent') }, { abstract: true }) {}
export class Fish extends Agent.extend({ food: ref<SharkLike>('Shark'), w: f64, tag: u8 }) {}
export class Shark extends Agent.extend({ prey: array(ref<FishLike>('Fish'), 3), energy: f32, big: array(f64, 4) }) {}
export class Holder extends object({ id: i32, any: ref(() => Agent), fish: ref(() => Fish) }) {
  /** A do-all for the overlap test. */
  touch(): void {
    this.id += 0;
  }
}
export const CLASSES = [Agent, Fish, Shark, Holder];

/** A small deterministic generator (tests must not depend on Math.random). */
export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

export interface Shape {
  seed: number;
  fish: number;
  sharks: number;
  holders: number;
  /** Fraction of objects deleted. */
  kill: number;
  /** Probability that a reference field is set. */
  density: number;
}

/**
 * A fragmented heap: objects of every class, references among the survivors (and, with
 * probability density/10, a dangling reference to a deleted object), the rest deleted.
 * The same shape on two runtimes of the same options gives the same heap bytes.
 */
export function build(rt: Runtime, s: Shape): void {
  const r = rng(s.seed);
  let id = 0;
  const fish = Array.from({ length: s.fish }, () => rt.create(Fish, { id: id++, w: r() * 100, tag: Math.floor(r() * 256) }));
  const sharks = Array.from({ length: s.sharks }, () => rt.create(Shark, { id: id++, energy: Math.fround(r() * 10) }));
  const holders = Array.from({ length: s.holders }, () => rt.create(Holder, { id: id++ }));
  const keep = (): boolean => r() >= s.kill;
  const liveFish = fish.filter(keep);
  const liveSharks = sharks.filter(keep);
  const liveHolders = holders.filter(keep);
  const agents: AgentLike[] = [...liveFish, ...liveSharks];
  const allAgents: AgentLike[] = [...fish, ...sharks];
  const pick = <T>(xs: readonly T[]): T | null => (xs.length > 0 && r() < s.density ? xs[Math.floor(r() * xs.length)]! : null);
  for (const f of liveFish) {
    f.friend = r() < s.density / 10 ? pick(allAgents) : pick(agents); // may dangle
    f.food = pick(liveSharks);
  }
  for (const k of liveSharks) {
    k.friend = pick(agents);
    for (let i = 0; i < 3; i++) k.prey.set(i, pick(liveFish));
    for (let i = 0; i < 4; i++) k.big.set(i, r());
  }
  for (const h of liveHolders) {
    h.any = pick(agents);
    h.fish = pick(liveFish);
  }
  const dead = new Set<SmmoObject>([...fish, ...sharks, ...holders]);
  for (const o of [...liveFish, ...liveSharks, ...liveHolders]) dead.delete(o);
  for (const o of dead) rt.destroy(o);
}

/** Delete every second Fish (in deviceDo order): what the defragmentation tests do between two calls. */
export function deleteEverySecondFish(rt: Runtime): void {
  let k = 0;
  const hs: number[] = [];
  rt.deviceDo(Fish, (f) => void (k++ % 2 === 0 && hs.push(f.__h)));
  for (const h of hs) rt.destroy(rt.get(Fish, h));
}

/** Delete every object (the same operations on two runtimes of the same history). */
export function clear(rt: Runtime): void {
  for (const cls of [Fish, Shark, Holder]) {
    const hs: number[] = [];
    rt.deviceDo(cls, (o) => void hs.push(o.__h));
    for (const h of hs) rt.destroy(rt.get(cls, h));
  }
}

/** The heap bytes defrag may change: bitmaps and type table, the calling thread's allocator state, the blocks. */
export function heapBytes(rt: Runtime): Uint8Array[] {
  const p = rt.heap.plan;
  const u8 = rt.heap.u8;
  const st = (p.stateWord + rt.main.allocator.state * p.stateWords) * 4;
  return [u8.slice(p.freeBitmapWord * 4, p.stateWord * 4), u8.slice(st, st + p.stateWords * 4), u8.slice(p.blocksOffset, p.heapBytes)];
}

/** The first byte where two heapBytes() results differ, named, or null. */
export function firstDifference(a: Uint8Array[], b: Uint8Array[]): string | null {
  const names = ['bitmaps/type table', 'allocator state', 'blocks'];
  for (let k = 0; k < a.length; k++) {
    if (a[k]!.length !== b[k]!.length) return `${names[k]}: ${a[k]!.length} vs ${b[k]!.length} bytes`;
    for (let i = 0; i < a[k]!.length; i++) if (a[k]![i] !== b[k]![i]) return `${names[k]}: byte ${i}: ${a[k]![i]} vs ${b[k]![i]}`;
  }
  return null;
}

/**
 * Classes for the WebAssembly rewrite's two other cases (runtime/defrag-wasm.ts V1): Node's
 * forwarding column is its f64 field (8-byte elements: the handle in the low 4 bytes), Link
 * has none (references and a u8 only), so a call that moves Link rewrites on the TypeScript
 * lanes. Links and Nodes refer to each other.
 */
export interface NodeLike extends SmmoObject {
  w: number;
  next: NodeLike | null;
  link: LinkLike | null;
}
export interface LinkLike extends SmmoObject {
  a: NodeLike | null;
  b: LinkLike | null;
  tag: number;
}
export class Node extends object({ next: ref<NodeLike>('Node'), w: f64, link: ref<LinkLike>('Link'), tag: u8 }) {}
export class Link extends object({ a: ref<NodeLike>('Node'), b: ref<LinkLike>('Link'), tag: u8 }) {}
export const COLUMN_CLASSES = [Node, Link];

/** A fragmented heap of Nodes and Links referring to each other (some dangling), as build(). */
export function buildColumns(rt: Runtime, s: { seed: number; nodes: number; links: number; kill: number }): void {
  const r = rng(s.seed);
  const nodes = Array.from({ length: s.nodes }, () => rt.create(Node, { w: r() * 1e6, tag: Math.floor(r() * 256) }));
  const links = Array.from({ length: s.links }, () => rt.create(Link, { tag: Math.floor(r() * 256) }));
  const keep = (): boolean => r() >= s.kill;
  const liveNodes = nodes.filter(keep);
  const liveLinks = links.filter(keep);
  const pick = <T>(xs: readonly T[]): T | null => (xs.length > 0 && r() < 0.9 ? xs[Math.floor(r() * xs.length)]! : null);
  for (const n of liveNodes) {
    n.next = r() < 0.1 ? pick(nodes) : pick(liveNodes); // may dangle
    n.link = pick(liveLinks);
  }
  for (const l of liveLinks) {
    l.a = pick(liveNodes);
    l.b = r() < 0.1 ? pick(links) : pick(liveLinks);
  }
  const dead = new Set<SmmoObject>([...nodes, ...links]);
  for (const o of [...liveNodes, ...liveLinks]) dead.delete(o);
  for (const o of dead) rt.destroy(o);
}
