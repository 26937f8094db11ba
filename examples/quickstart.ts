/**
 * smmo quick start: patches of grass, grazers that eat grass and split in two, and
 * hunters that eat grazers. It shows fields, references, single inheritance, an abstract
 * class, do-alls over a base class (one pass per subclass), objects created and deleted
 * inside a do-all, deviceDo, counts and heap statistics.
 *
 * Run it: npm run build && node dist/examples/quickstart.js
 * (README.md shows this file; in your own project import from 'smmo' instead.)
 */
import { pathToFileURL } from 'node:url';
import { createRuntime, f32, object, ref, u32 } from '../index.js';

/** A patch of grass. */
export class Patch extends object({
  grass: f32, // 0 … 1
}) {
  grow(rate: number): void {
    this.grass = Math.min(1, this.grass + rate);
  }
}

/**
 * What every animal has. `{ abstract: true }` tells the runtime that no plain Animal
 * exists (only its subclasses get blocks); `abstract` tells TypeScript the same.
 */
export abstract class Animal extends object(
  {
    patch: ref(() => Patch), // where it stands
    energy: f32,
    age: u32,
  },
  { abstract: true },
) {
  /** One step of an animal's life; parallelDo(Animal, 'live') runs it for Grazers and Hunters. */
  live(): void {
    this.age += 1;
    this.eat(); // an ordinary virtual call: Grazer.eat or Hunter.eat
    this.energy -= this.upkeep();
    if (this.energy <= 0) this.destroy(); // a method may delete its own object
  }

  eat(): void {}

  upkeep(): number {
    return 0.1;
  }
}

export class Grazer extends Animal.extend({ eaten: f32 }) {
  override eat(): void {
    const patch = this.patch!; // references are followed like properties
    const bite = Math.min(patch.grass, 0.2);
    patch.grass -= bite;
    this.energy += bite;
    this.eaten += bite;
    if (this.energy > 1.5) {
      // Split in two. The newborn is not visited by the pass that is running.
      this.energy /= 2;
      this.runtime.create(Grazer, { patch, energy: this.energy });
    }
  }
}

export class Hunter extends Animal.extend({ kills: u32 }) {
  override eat(): void {
    if (this.energy > 1) return; // not hungry
    // deviceDo: a sequential loop over every Grazer, here to find the best-fed one.
    // It hands out one view re-positioned for each object: keep handles, not views.
    let prey = 0;
    let most = 0;
    this.runtime.deviceDo(Grazer, (g) => {
      if (g.energy > most) {
        most = g.energy;
        prey = g.handle;
      }
    });
    if (prey !== 0) {
      const g = this.runtime.get(Grazer, prey);
      this.patch = g.patch; // assign a reference: the hunter moves to the prey's patch
      this.energy += g.energy / 2;
      this.kills += 1;
      g.destroy(); // a do-all over Hunters may delete objects of other classes
    }
  }

  override upkeep(): number {
    return 0.15;
  }
}

export interface QuickstartResult {
  /** Grazers and hunters alive after each step. */
  history: { grazers: number; hunters: number }[];
  kills: number;
  grassLeft: number;
  objects: Record<string, number>;
  usedBlocks: number;
}

/** Run the ecosystem for `steps` steps on `patches` patches of grass. */
export async function simulate(steps = 30, patches = 64): Promise<QuickstartResult> {
  // Every class the program uses, the abstract one included; checked mode turns a
  // stale or wrong-type reference into an InvalidHandleError instead of garbage.
  const rt = await createRuntime({ classes: [Patch, Animal, Grazer, Hunter], heap: '8MB', checked: true });
  try {
    // The patches: parallelNew gives the init function each new object and its index.
    // The function sees one view re-positioned for each object: keep handles, not views.
    const field: number[] = [];
    await rt.parallelNew(Patch, patches, (p, i) => {
      p.grass = (i % 4) / 4;
      field.push(p.handle);
    });
    await rt.parallelNew(Grazer, patches / 2, (g, i) => {
      g.patch = rt.get(Patch, field[(7 * i) % patches]!);
      g.energy = 1;
    });
    for (let i = 0; i < 3; i++) rt.create(Hunter, { patch: rt.get(Patch, field[i]!), energy: 2 });

    // Each step is a list of do-alls.
    const history: QuickstartResult['history'] = [];
    for (let step = 0; step < steps; step++) {
      await rt.parallelDo(Patch, 'grow', 0.1);
      await rt.parallelDo(Animal, 'live'); // one pass over the Grazers, then one over the Hunters
      rt.validateHeap(); // every heap invariant (cheap at this size; tests do it after every step)
      history.push({ grazers: rt.count(Grazer), hunters: rt.count(Hunter) });
    }

    let kills = 0;
    rt.deviceDo(Hunter, (h) => (kills += h.kills));
    let grassLeft = 0;
    rt.deviceDo(Patch, (p) => (grassLeft += p.grass));
    return { history, kills, grassLeft, objects: rt.objectCounts(), usedBlocks: rt.stats().heap.usedBlocks };
  } finally {
    await rt.close();
  }
}

// Run as a script: print the populations.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await simulate();
  r.history.forEach((h, i) => console.log(`step ${String(i + 1).padStart(2)}: ${h.grazers} grazers, ${h.hunters} hunters`));
  console.log(`hunters' kills: ${r.kills}; objects: ${JSON.stringify(r.objects)}; heap blocks used: ${r.usedBlocks}`);
}
