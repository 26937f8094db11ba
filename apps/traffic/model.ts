/**
 * traffic classes: the Nagel–Schreckenberg model on a street network, as DynaSOAr's
 * example/traffic/dynasoar (traffic.h, traffic.cu). Constants: network.ts.
 *
 * A step is four do-alls, the original's step():
 *   ProducerCell.createCar   a free producer cell creates a car with probability 0.02
 *   TrafficLight.step        every PHASE_TIME steps a light turns its green incoming cell
 *                            red and the next one green (the original's TrafficLight, a
 *                            plain struct there, "TODO: migrating this to DynaSOAr"; an
 *                            smmo class here)
 *   Car.preparePath          accelerate by 1 or 2 up to the car's maximum, extend the path
 *                            by random outgoing cells while they are free (stopping at a
 *                            target), limit the velocity by the speed limits along the
 *                            path (red cells cannot be entered or left), slow down by one
 *                            with probability 0.2
 *   Car.move                 move `velocity` cells along the path; a car that reaches a
 *                            target (or a cell with no way out) leaves the simulation
 *
 * Random numbers: network.ts `draw(key, iteration, k)`, a hash of the object's key, the
 * iteration and the draw's index — no stream state, nothing depends on threads.
 *
 * Who writes what:
 *  - createCar writes its own cell and a new car; it reads only its own cell.
 *  - TrafficLight.step writes the speed limits of its own incoming cells; a cell is the
 *    incoming cell of at most one light.
 *  - preparePath writes only its own car, and reads cells that nobody writes in the pass.
 *  - move writes the car's old cell (only this car is on it) and its destination. Two
 *    cars never get the same destination (README "Conflicts"): cars on one street stop
 *    behind each other, and where streets meet (the cell_out cells of an intersection)
 *    only the one green incoming cell lets cars through. The original asserts it
 *    (Cell::occupy); here a move into an occupied cell throws, whatever the order.
 */
import { array, bool, f32, object, ref, u32, type SmmoContext } from '../../runtime/index.js';
import {
  CAR_THRESHOLD,
  draw,
  K_ACCELERATE,
  K_CAR_KEY,
  K_CAR_MAX_VELOCITY,
  K_PATH,
  K_PRODUCE,
  K_SLOW_DOWN,
  MAX_DEGREE,
  MAX_VELOCITY,
  SLOW_DOWN_THRESHOLD,
} from './network.js';

/** A cell of a street. */
export class Cell extends object({
  outgoing: array(ref<Cell>('Cell'), MAX_DEGREE), // the cells a car may go to next
  numOutgoing: u32,
  car: ref<Car>('Car'), // the car on this cell, or null
  maxVelocity: u32, // the street's speed limit
  currentMaxVelocity: u32, // the limit now: 0 while a traffic light holds this cell red
  isTarget: bool, // cars leave the simulation here
  id: u32, // the cell's id in the network (network.ts), for digests and pictures
  x: f32, // position in the unit square (pictures)
  y: f32,
}) {}

/** A cell that creates cars. */
export class ProducerCell extends Cell.extend({
  key: u32, // random key (network.ts draw)
}) {
  createCar(iteration: number): void {
    if (this.car !== null) return;
    const key = this.key;
    if (draw(key, iteration, K_PRODUCE) >= CAR_THRESHOLD) return;
    const maxVelocity = (draw(key, iteration, K_CAR_MAX_VELOCITY) % (MAX_VELOCITY / 2)) + MAX_VELOCITY / 2;
    spawnCar(this.runtime, this, draw(key, iteration, K_CAR_KEY), maxVelocity);
  }
}

/** A car. */
export class Car extends object({
  path: array(ref<Cell>('Cell'), MAX_VELOCITY), // the cells it will drive this step
  position: ref<Cell>('Cell'),
  pathLength: u32,
  velocity: u32,
  maxVelocity: u32,
  key: u32, // random key (network.ts draw)
}) {
  /** The original's step_prepare_path: initialise, accelerate, extend path, constrain velocity, slow down. */
  preparePath(iteration: number): void {
    const key = this.key;
    const position = this.position!;
    const path = this.path;
    // Accelerate by 1 or 2.
    let v = this.velocity + 1 + (draw(key, iteration, K_ACCELERATE) % 2);
    const vMax = this.maxVelocity;
    if (v > vMax) v = vMax;
    // Extend the path: random outgoing cells, while free.
    let length = 0;
    let cell = position;
    for (let i = 0; i < v; i++) {
      const out = cell.numOutgoing;
      if (out === 0 || cell.isTarget) break;
      const next = cell.outgoing.get(draw(key, iteration, K_PATH + i) % out)!;
      if (next.car !== null) break;
      cell = next;
      path.set(i, next);
      length++;
    }
    v = length;
    // Constrain the velocity by the speed limits (a red cell cannot be left or entered).
    const here = position.currentMaxVelocity;
    if (v > here) v = here;
    let distance = 1;
    while (distance <= v) {
      const next = path.get(distance - 1)!;
      if (next.car !== null) {
        v = distance - 1;
        break;
      }
      const limit = next.currentMaxVelocity;
      if (v > limit) {
        if (limit > distance - 1) v = limit;
        else {
          v = distance - 1;
          break;
        }
      }
      distance++;
    }
    // Slow down with probability 0.2.
    if (draw(key, iteration, K_SLOW_DOWN) < SLOW_DOWN_THRESHOLD && v > 0) v--;
    this.pathLength = length;
    this.velocity = v;
  }

  /** The original's step_move. */
  move(): void {
    const v = this.velocity;
    if (v === 0) return;
    const from = this.position!;
    const to = this.path.get(v - 1)!;
    if (to.car !== null) throw new Error(`traffic: two cars drive into cell ${to.id}`);
    from.car = null;
    if (to.numOutgoing === 0 || to.isTarget) {
      this.destroy(); // arrived: leaves the simulation
      return;
    }
    to.car = this;
    this.position = to;
  }
}

/** A traffic light: lets one incoming cell of an intersection at a time through. */
export class TrafficLight extends object({
  cells: array(ref<Cell>('Cell'), MAX_DEGREE), // the intersection's incoming cells
  numCells: u32,
  timer: u32,
  phaseTime: u32,
  phase: u32, // index of the green cell (none is green before the first switch)
}) {
  step(): void {
    const n = this.numCells;
    if (n === 0) return;
    const t = (this.timer + 1) % this.phaseTime;
    this.timer = t;
    if (t !== 0) return;
    const cells = this.cells;
    cells.get(this.phase)!.currentMaxVelocity = 0;
    const p = (this.phase + 1) % n;
    this.phase = p;
    const green = cells.get(p)!;
    green.currentMaxVelocity = green.maxVelocity;
  }
}

/** Create a car on the free cell `cell` (the original's Car constructor). */
export function spawnCar(ctx: SmmoContext, cell: Cell, key: number, maxVelocity: number): void {
  const car = ctx.create(Car);
  car.position = cell;
  car.key = key;
  car.maxVelocity = maxVelocity;
  cell.car = car;
}

/** Every class of the app. */
export const CLASSES = [Cell, ProducerCell, Car, TrafficLight];
