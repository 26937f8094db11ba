/*
 * Native reference for bench/wasm.ts: the nbody step of the smmo kernels
 * (wasm/src/nbody.rs) on plain SOA arrays, compiled on the spot with gcc.
 *
 * Same initial state as apps/nbody (xoshiro128** seeded by splitmix32, apps/random.ts; the
 * same draws in the same order) and the same arithmetic as the kernels: computeForce in f32
 * with the pair term t = G*m*m_o / ((d2 + D) * sqrt(d2)), the body itself excluded by index;
 * update in f64, rounded to f32 at each store. Only the summation order differs (here: the
 * vectoriser's lanes over the body index; the kernel: block order, 4 lanes), so digests
 * agree within the float tolerance, not bit for bit.
 *
 * The inner loop is the plain loop a C programmer writes, with `#pragma omp simd
 * reduction` so that gcc may vectorise the float sum without -ffast-math
 * (-fopenmp-simd enables only that pragma, no threads), and -fno-math-errno so that sqrtf
 * can be the vector instruction (wasm's f32x4.sqrt sets no errno either). Without these two
 * flags gcc keeps the loop scalar; bench/wasm.ts also reports that build.
 *
 *   gcc -O3 -msse4.2 -fno-math-errno -fopenmp-simd nbody.c -o nbody -lm
 *   ./nbody BODIES ITERATIONS SEED
 *   -> {"digest1": digest after the first iteration, "seconds": time of iterations 2..N}
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const float G = 6.673e-11f;
static const float DAMPENING = 0.05f;
static const double DT = 0.02;
static const double MAX_MASS = 1000;

/* apps/random.ts: xoshiro128**, state seeded with splitmix32. */
static uint32_t rs[4];
static uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }
static void seed_random(uint32_t seed) {
  uint32_t s = seed;
  for (int i = 0; i < 4; i++) {
    s += 0x9e3779b9u;
    uint32_t z = s;
    z = (z ^ (z >> 16)) * 0x85ebca6bu;
    z = (z ^ (z >> 13)) * 0xc2b2ae35u;
    rs[i] = z ^ (z >> 16);
  }
}
static double next_random(void) {
  uint32_t result = rotl(rs[1] * 5u, 7) * 9u;
  uint32_t t = rs[1] << 9;
  rs[2] ^= rs[0];
  rs[3] ^= rs[1];
  rs[1] ^= rs[2];
  rs[0] ^= rs[3];
  rs[2] ^= t;
  rs[3] = rotl(rs[3], 11);
  return result / 4294967296.0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int n;
static float *px, *py, *vx, *vy, *fx, *fy, *m;

static void compute_force(void) {
  for (int i = 0; i < n; i++) {
    const float x = px[i], y = py[i], gm = G * m[i];
    float sx = 0, sy = 0;
#pragma omp simd reduction(+ : sx, sy)
    for (int j = 0; j < n; j++) {
      float dx = px[j] - x, dy = py[j] - y;
      float d2 = dx * dx + dy * dy;
      float t = gm * m[j] / ((d2 + DAMPENING) * sqrtf(d2));
      t = j == i ? 0.0f : t;
      sx += t * dx;
      sy += t * dy;
    }
    fx[i] = sx;
    fy[i] = sy;
  }
}

static void update(void) {
  for (int i = 0; i < n; i++) {
    vx[i] = (float)(vx[i] + fx[i] * DT / m[i]);
    vy[i] = (float)(vy[i] + fy[i] * DT / m[i]);
    px[i] = (float)(px[i] + vx[i] * DT);
    py[i] = (float)(py[i] + vy[i] * DT);
    if (px[i] < -1 || px[i] > 1) vx[i] = -vx[i];
    if (py[i] < -1 || py[i] > 1) vy[i] = -vy[i];
  }
}

static double digest(void) {
  double d = 0;
  for (int i = 0; i < n; i++) d += (double)px[i] + 2.0 * py[i] + 3.0 * vx[i] + 4.0 * vy[i];
  return d;
}

int main(int argc, char **argv) {
  n = argc > 1 ? atoi(argv[1]) : 20000;
  int iters = argc > 2 ? atoi(argv[2]) : 3;
  seed_random(argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 42u);
  if (n < 1 || iters < 2) {
    fprintf(stderr, "usage: nbody BODIES ITERATIONS(>=2) SEED\n");
    return 2;
  }
  float **arrays[] = {&px, &py, &vx, &vy, &fx, &fy, &m};
  for (int k = 0; k < 7; k++) {
    *arrays[k] = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
    if (!*arrays[k]) return 1;
  }
  for (int i = 0; i < n; i++) { /* apps/nbody/nbody.ts init(), field by field in that order */
    px[i] = (float)(2 * next_random() - 1);
    py[i] = (float)(2 * next_random() - 1);
    vx[i] = (float)((next_random() - 0.5) / 1000);
    vy[i] = (float)((next_random() - 0.5) / 1000);
    m[i] = (float)((next_random() / 2 + 0.5) * MAX_MASS);
    fx[i] = fy[i] = 0;
  }
  compute_force();
  update();
  double digest1 = digest();
  double t0 = now();
  for (int it = 1; it < iters; it++) {
    compute_force();
    update();
  }
  double t1 = now();
  printf("{\"digest1\":%.17g,\"seconds\":%.6f,\"timedIterations\":%d,\"digest\":%.17g}\n", digest1, t1 - t0, iters - 1, digest());
  return 0;
}
