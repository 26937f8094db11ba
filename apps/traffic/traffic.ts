/**
 * traffic: initial state (the street network of network.ts as smmo objects), step (the
 * list of do-all phases), digest, invariants and picture.
 */
import { UsageError, type Runtime } from '../../runtime/index.js';
import type { AppParams, Picture } from '../app.js';
import { Car, Cell, CLASSES, ProducerCell, TrafficLight } from './model.js';
import { buildNetwork, carWord, digestOf, MAX_DEGREE, PHASE_TIME, type Network } from './network.js';

export { CLASSES };

/**
 * Defaults of `smmo run traffic`. The original (configuration.h) has 17 500 intersections
 * (about 4.6 million cells) and 12 000 iterations; the CLI's default is smaller (README).
 */
export const DEFAULTS = { intersections: 500, iterations: 1000 };
export const ORIGINAL = { intersections: 17500, iterations: 12000 };

export function intersectionsOf(params: AppParams): number {
  return Number(params['intersections'] ?? DEFAULTS.intersections);
}

/** Create the objects of network `net`: cells in id order (ProducerCells where net says), then the lights. */
export function initFromNetwork(rt: Runtime, net: Network): void {
  const ctx = rt.context;
  const cells: Cell[] = new Array<Cell>(net.cells);
  for (let i = 0; i < net.cells; i++) {
    const c = net.isProducer[i] ? ctx.create(ProducerCell) : ctx.create(Cell);
    if (c instanceof ProducerCell) c.key = net.producerKey[i]!;
    c.numOutgoing = net.numOutgoing[i]!;
    c.maxVelocity = net.maxVelocity[i]!;
    c.currentMaxVelocity = net.currentMaxVelocity[i]!;
    c.isTarget = net.isTarget[i] === 1;
    c.id = i;
    c.x = net.x[i]!;
    c.y = net.y[i]!;
    cells[i] = c;
  }
  for (let i = 0; i < net.cells; i++) {
    const out = cells[i]!.outgoing;
    for (let d = 0; d < net.numOutgoing[i]!; d++) out.set(d, cells[net.outgoing[i * MAX_DEGREE + d]!]!);
  }
  for (let l = 0; l < net.lights; l++) {
    const light = ctx.create(TrafficLight);
    light.numCells = net.lightNumCells[l]!;
    light.phaseTime = PHASE_TIME;
    for (let j = 0; j < light.numCells; j++) light.cells.set(j, cells[net.lightCells[l * MAX_DEGREE + j]!]!);
  }
}

/** Build the network of `intersections` intersections for `seed` and create its objects. */
export function init(rt: Runtime, intersections: number, seed: number): Promise<void> {
  initFromNetwork(rt, buildNetwork(intersections, seed));
  return Promise.resolve();
}

/** One iteration: four do-alls, as the original's step(). */
export async function step(rt: Runtime, iteration: number): Promise<void> {
  await rt.parallelDo(ProducerCell, 'createCar', iteration);
  await rt.parallelDo(TrafficLight, 'step');
  await rt.parallelDo(Car, 'preparePath', iteration);
  await rt.parallelDo(Car, 'move');
}

/**
 * Cars · 2³² + the sum (mod 2³²) over cars of a hash of (cell id, velocity, maximum
 * velocity, key): order-independent, so no cell table is needed.
 */
export function digest(rt: Runtime): number {
  let sum = 0;
  let cars = 0;
  rt.deviceDo(Car, (c) => {
    cars++;
    sum = (sum + carWord(c.position!.id, c.velocity, c.maxVelocity, c.key)) >>> 0;
  });
  return digestOf(cars, sum);
}

/**
 * Check the model's invariants; throws an Error naming the first violation: every car's
 * cell holds that car, every occupied cell's car stands on it, cell ids are 0 … cells-1, lights hold red all but at most one of their cells. (A car may stand on a target: one
 * created on a producer cell that is also a target never moves, as in the original.)
 */
export function checkInvariants(rt: Runtime): void {
  let occupied = 0;
  let cells = 0;
  let idSum = 0;
  rt.deviceDo(Cell, (c) => {
    cells++;
    idSum += c.id;
    const car = c.car;
    if (car === null) return;
    occupied++;
    if (car.position?.handle !== c.handle)
      throw new Error(`traffic: cell ${c.id} holds car ${car.handle}, which is on ${car.position?.id ?? 'null'}`);
  });
  if (idSum !== (cells * (cells - 1)) / 2) throw new Error('traffic: cell ids are not 0 … cells-1');
  let cars = 0;
  rt.deviceDo(Car, (car) => {
    cars++;
    const p = car.position;
    if (p === null) throw new Error(`traffic: car ${car.handle} has no position`);
    if (p.car?.handle !== car.handle)
      throw new Error(`traffic: car ${car.handle} is on cell ${p.id}, which holds ${p.car?.handle ?? 'nothing'}`);
    if (car.velocity > car.maxVelocity) throw new Error(`traffic: car ${car.handle} is faster than its maximum`);
  });
  if (cars !== occupied) throw new Error(`traffic: ${cars} cars but ${occupied} occupied cells`);
  rt.deviceDo(TrafficLight, (l) => {
    let green = 0;
    for (let j = 0; j < l.numCells; j++) if (l.cells.get(j)!.currentMaxVelocity !== 0) green++;
    if (green > 1) throw new Error(`traffic: light ${l.handle} has ${green} green cells`);
  });
}

/** Side of the picture in pixels: one pixel is about one cell length (0.005) of the unit square. */
export const PICTURE_SIZE = 200;

/** Colours: background, street, red light, car standing, car slow (1 … 4), car fast (≥ 5). */
export const PALETTE: readonly (readonly [number, number, number])[] = [
  [12, 14, 20],
  [70, 74, 84],
  [200, 40, 40],
  [240, 90, 40],
  [240, 200, 60],
  [80, 220, 120],
];

/** Cells at their position in the unit square, coloured by occupancy and the car's speed. */
export function picture(rt: Runtime): Picture {
  const size = PICTURE_SIZE;
  const pixels = new Uint8Array(size * size);
  const at = (c: Cell): number => {
    const px = Math.min(size - 1, Math.max(0, Math.floor(c.x * size)));
    const py = Math.min(size - 1, Math.max(0, Math.floor(c.y * size)));
    return py * size + px;
  };
  rt.deviceDo(Cell, (c) => {
    const i = at(c);
    const colour = c.currentMaxVelocity === 0 ? 2 : 1;
    if (pixels[i]! < colour) pixels[i] = colour;
  });
  rt.deviceDo(Car, (car) => {
    const i = at(car.position!);
    const colour = car.velocity === 0 ? 3 : car.velocity < 5 ? 4 : 5;
    if (pixels[i]! < colour) pixels[i] = colour;
  });
  return { width: size, height: size, palette: PALETTE, pixels };
}

export function checkParams(params: AppParams): void {
  const n = intersectionsOf(params);
  if (!Number.isInteger(n) || n < 2) throw new UsageError(`traffic: --intersections must be at least 2, got ${n}`);
}
