/**
 * traffic baseline, SOA: typed arrays per field of the cells (the network's own arrays),
 * of the lights and of the cars; cars live in the first `cars` slots of their arrays and
 * an arrived car's slot takes the last car (the car arrays have one slot per cell: at
 * most one car stands on a cell). A car keeps only its destination, not its path: the
 * path is scratch of the prepare pass.
 *
 * Same network (network.ts), phases, counter-based random numbers and rules as the smmo
 * app (model.ts), so the digest is the same exactly.
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

export class TrafficSoa implements BaselineRun {
  private readonly net: Network;
  private readonly currentMaxVelocity: Uint8Array;
  /** 1 where a car stands. */
  private readonly occupied: Uint8Array;
  private readonly producers: Int32Array;
  private readonly lightTimer: Uint32Array;
  private readonly lightPhase: Uint32Array;
  private cars = 0;
  private readonly carPosition: Int32Array;
  private readonly carVelocity: Uint8Array;
  private readonly carMaxVelocity: Uint8Array;
  private readonly carKey: Uint32Array;
  private readonly carDestination: Int32Array;
  private readonly path = new Int32Array(MAX_VELOCITY);

  constructor(net: Network) {
    this.net = net;
    const n = net.cells;
    this.currentMaxVelocity = net.currentMaxVelocity.slice();
    this.occupied = new Uint8Array(n);
    const producers: number[] = [];
    for (let i = 0; i < n; i++) if (net.isProducer[i] === 1) producers.push(i);
    this.producers = Int32Array.from(producers);
    this.lightTimer = new Uint32Array(net.lights);
    this.lightPhase = new Uint32Array(net.lights);
    this.carPosition = new Int32Array(n);
    this.carVelocity = new Uint8Array(n);
    this.carMaxVelocity = new Uint8Array(n);
    this.carKey = new Uint32Array(n);
    this.carDestination = new Int32Array(n);
  }

  step(iteration: number): void {
    const { net, occupied, currentMaxVelocity: cmv } = this;
    // ProducerCell.createCar
    for (const p of this.producers) {
      const key = net.producerKey[p]!;
      if (occupied[p] === 1 || draw(key, iteration, K_PRODUCE) >= CAR_THRESHOLD) continue;
      const c = this.cars++;
      this.carPosition[c] = p;
      this.carVelocity[c] = 0;
      this.carMaxVelocity[c] = (draw(key, iteration, K_CAR_MAX_VELOCITY) % (MAX_VELOCITY / 2)) + MAX_VELOCITY / 2;
      this.carKey[c] = draw(key, iteration, K_CAR_KEY);
      occupied[p] = 1;
    }
    // TrafficLight.step
    for (let l = 0; l < net.lights; l++) {
      const t = (this.lightTimer[l]! + 1) % PHASE_TIME;
      this.lightTimer[l] = t;
      if (t !== 0) continue;
      const n = net.lightNumCells[l]!;
      cmv[net.lightCells[l * MAX_DEGREE + this.lightPhase[l]!]!] = 0;
      const p = (this.lightPhase[l]! + 1) % n;
      this.lightPhase[l] = p;
      const green = net.lightCells[l * MAX_DEGREE + p]!;
      cmv[green] = net.maxVelocity[green]!;
    }
    // Car.preparePath
    for (let c = 0; c < this.cars; c++) this.preparePath(c, iteration);
    // Car.move, from the last slot down: an arrived car's slot takes a car already moved.
    for (let c = this.cars - 1; c >= 0; c--) {
      const v = this.carVelocity[c]!;
      if (v === 0) continue;
      const to = this.carDestination[c]!;
      if (occupied[to] === 1) throw new Error(`traffic (soa): two cars drive into cell ${to}`);
      occupied[this.carPosition[c]!] = 0;
      if (net.numOutgoing[to] === 0 || net.isTarget[to] === 1) {
        const last = --this.cars;
        this.carPosition[c] = this.carPosition[last]!;
        this.carVelocity[c] = this.carVelocity[last]!;
        this.carMaxVelocity[c] = this.carMaxVelocity[last]!;
        this.carKey[c] = this.carKey[last]!;
        this.carDestination[c] = this.carDestination[last]!;
        continue;
      }
      occupied[to] = 1;
      this.carPosition[c] = to;
    }
  }

  private preparePath(c: number, iteration: number): void {
    const { net, occupied, path } = this;
    const cmv = this.currentMaxVelocity;
    const key = this.carKey[c]!;
    const position = this.carPosition[c]!;
    let v = this.carVelocity[c]! + 1 + (draw(key, iteration, K_ACCELERATE) % 2);
    if (v > this.carMaxVelocity[c]!) v = this.carMaxVelocity[c]!;
    let cell = position;
    let length = 0;
    for (let i = 0; i < v; i++) {
      const out = net.numOutgoing[cell]!;
      if (out === 0 || net.isTarget[cell] === 1) break;
      const next = net.outgoing[cell * MAX_DEGREE + (draw(key, iteration, K_PATH + i) % out)]!;
      if (occupied[next] === 1) break;
      cell = next;
      path[i] = next;
      length++;
    }
    v = length;
    if (v > cmv[position]!) v = cmv[position]!;
    let distance = 1;
    while (distance <= v) {
      const next = path[distance - 1]!;
      if (occupied[next] === 1) {
        v = distance - 1;
        break;
      }
      const limit = cmv[next]!;
      if (v > limit) {
        if (limit > distance - 1) v = limit;
        else {
          v = distance - 1;
          break;
        }
      }
      distance++;
    }
    if (draw(key, iteration, K_SLOW_DOWN) < SLOW_DOWN_THRESHOLD && v > 0) v--;
    this.carVelocity[c] = v;
    this.carDestination[c] = v > 0 ? path[v - 1]! : position;
  }

  digest(): number {
    let sum = 0;
    for (let c = 0; c < this.cars; c++)
      sum = (sum + carWord(this.carPosition[c]!, this.carVelocity[c]!, this.carMaxVelocity[c]!, this.carKey[c]!)) >>> 0;
    return digestOf(this.cars, sum);
  }

  counts(): Record<string, number> {
    return {
      Cell: this.net.cells - this.producers.length,
      ProducerCell: this.producers.length,
      Car: this.cars,
      TrafficLight: this.net.lights,
    };
  }
}

const baseline: Baseline = {
  app: 'traffic',
  layout: 'soa',
  create: (params, seed) => new TrafficSoa(buildNetwork(intersectionsOf(params), seed)),
};
export default baseline;
