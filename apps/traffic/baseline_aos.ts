/**
 * traffic baseline, AOS: one plain JavaScript object per cell, per traffic light and per
 * car (cars in an array; arrived cars are dropped from it after the move pass).
 *
 * Same network (network.ts), phases, counter-based random numbers and rules as the smmo
 * app (model.ts), so the digest is the same exactly. Cars are visited in the order they
 * were created; the result does not depend on it (model.ts "Who writes what").
 */
import type { Baseline, BaselineRun } from '../baselines/baseline.js';
import {
  buildNetwork,
  CAR_THRESHOLD,
  carWord,
  digestOf,
  draw,
  K_ACCELERATE,
  K_CAR_KEY,
  K_CAR_MAX_VELOCITY,
  K_PATH,
  K_PRODUCE,
  K_SLOW_DOWN,
  MAX_DEGREE,
  MAX_VELOCITY,
  PHASE_TIME,
  SLOW_DOWN_THRESHOLD,
  type Network,
} from './network.js';
import { intersectionsOf } from './traffic.js';

interface CellObject {
  id: number;
  outgoing: CellObject[];
  car: CarObject | null;
  maxVelocity: number;
  currentMaxVelocity: number;
  isTarget: boolean;
  /** A producer cell's key; null for other cells. */
  key: number | null;
}

interface CarObject {
  path: CellObject[];
  position: CellObject;
  velocity: number;
  maxVelocity: number;
  key: number;
  arrived: boolean;
}

interface LightObject {
  cells: CellObject[];
  timer: number;
  phase: number;
}

export class TrafficAos implements BaselineRun {
  private readonly cells: CellObject[] = [];
  private readonly producers: CellObject[] = [];
  private readonly lights: LightObject[] = [];
  private cars: CarObject[] = [];

  constructor(net: Network) {
    for (let i = 0; i < net.cells; i++) {
      const c: CellObject = {
        id: i,
        outgoing: [],
        car: null,
        maxVelocity: net.maxVelocity[i]!,
        currentMaxVelocity: net.currentMaxVelocity[i]!,
        isTarget: net.isTarget[i] === 1,
        key: net.isProducer[i] === 1 ? net.producerKey[i]! : null,
      };
      this.cells.push(c);
      if (c.key !== null) this.producers.push(c);
    }
    for (let i = 0; i < net.cells; i++)
      for (let d = 0; d < net.numOutgoing[i]!; d++) this.cells[i]!.outgoing.push(this.cells[net.outgoing[i * MAX_DEGREE + d]!]!);
    for (let l = 0; l < net.lights; l++) {
      const cells: CellObject[] = [];
      for (let j = 0; j < net.lightNumCells[l]!; j++) cells.push(this.cells[net.lightCells[l * MAX_DEGREE + j]!]!);
      this.lights.push({ cells, timer: 0, phase: 0 });
    }
  }

  step(iteration: number): void {
    // ProducerCell.createCar
    for (const p of this.producers) {
      if (p.car !== null || draw(p.key!, iteration, K_PRODUCE) >= CAR_THRESHOLD) continue;
      const maxVelocity = (draw(p.key!, iteration, K_CAR_MAX_VELOCITY) % (MAX_VELOCITY / 2)) + MAX_VELOCITY / 2;
      const car: CarObject = { path: [], position: p, velocity: 0, maxVelocity, key: draw(p.key!, iteration, K_CAR_KEY), arrived: false };
      p.car = car;
      this.cars.push(car);
    }
    // TrafficLight.step
    for (const l of this.lights) {
      l.timer = (l.timer + 1) % PHASE_TIME;
      if (l.timer !== 0) continue;
      l.cells[l.phase]!.currentMaxVelocity = 0;
      l.phase = (l.phase + 1) % l.cells.length;
      const green = l.cells[l.phase]!;
      green.currentMaxVelocity = green.maxVelocity;
    }
    // Car.preparePath
    for (const car of this.cars) this.preparePath(car, iteration);
    // Car.move
    let arrived = 0;
    for (const car of this.cars) {
      const v = car.velocity;
      if (v === 0) continue;
      const to = car.path[v - 1]!;
      if (to.car !== null) throw new Error(`traffic (aos): two cars drive into cell ${to.id}`);
      car.position.car = null;
      if (to.outgoing.length === 0 || to.isTarget) {
        car.arrived = true;
        arrived++;
        continue;
      }
      to.car = car;
      car.position = to;
    }
    if (arrived > 0) this.cars = this.cars.filter((c) => !c.arrived);
  }

  private preparePath(car: CarObject, iteration: number): void {
    const key = car.key;
    let v = Math.min(car.maxVelocity, car.velocity + 1 + (draw(key, iteration, K_ACCELERATE) % 2));
    let cell = car.position;
    let length = 0;
    for (let i = 0; i < v; i++) {
      if (cell.outgoing.length === 0 || cell.isTarget) break;
      const next = cell.outgoing[draw(key, iteration, K_PATH + i) % cell.outgoing.length]!;
      if (next.car !== null) break;
      cell = next;
      car.path[i] = next;
      length++;
    }
    v = Math.min(length, car.position.currentMaxVelocity);
    for (let distance = 1; distance <= v; distance++) {
      const next = car.path[distance - 1]!;
      if (next.car !== null) {
        v = distance - 1;
        break;
      }
      if (v > next.currentMaxVelocity) {
        if (next.currentMaxVelocity > distance - 1) v = next.currentMaxVelocity;
        else {
          v = distance - 1;
          break;
        }
      }
    }
    if (draw(key, iteration, K_SLOW_DOWN) < SLOW_DOWN_THRESHOLD && v > 0) v--;
    car.velocity = v;
  }

  digest(): number {
    let sum = 0;
    for (const c of this.cars) sum = (sum + carWord(c.position.id, c.velocity, c.maxVelocity, c.key)) >>> 0;
    return digestOf(this.cars.length, sum);
  }

  counts(): Record<string, number> {
    return {
      Cell: this.cells.length - this.producers.length,
      ProducerCell: this.producers.length,
      Car: this.cars.length,
      TrafficLight: this.lights.length,
    };
  }
}

const baseline: Baseline = {
  app: 'traffic',
  layout: 'aos',
  create: (params, seed) => new TrafficAos(buildNetwork(intersectionsOf(params), seed)),
};
export default baseline;
