/* Plain-C reference loop for the stabsim benchmark: P1 Algorithm 1 twin run.
 *
 * One replicate of "p1_alg1" (pair i_t with i_{t-1}), AUC hinge loss, optional l2-ball
 * projection, output = sum_t eta_t w_{t-2} / sum_t eta_t, run on S and on S' in lockstep
 * with the same index draws -- the same work, in the same floating-point order, as
 * stabsim.kernels.twin.twin_kernel for one replicate:
 *
 *   i_t = randint(key, t, n), t = 0..T   (SplitMix64 counter-based, as stabsim.rng)
 *   step t: g = grad f(w_{t-1}; z_{i_t}, z_{i_{t-1}}),  w_t = Pi(w_{t-1} - eta_t g)
 *   S' reads row krow instead of row k.
 *
 * Written the way a C programmer would: in-place update of w, one copy for w_{t-2}.  The
 * output sum is deferred as in the kernel: the weights of the steps since w_{t-2} last
 * changed are summed, and added times w_{t-2} when it changes (sum_j om_j w = (sum_j om_j) w,
 * rounded differently from adding om_j w one by one); a step that leaves w unchanged
 * (zero gradient, no active projection) needs no copy.  This fixes the floating-point
 * program that the kernel, this loop and its numba port share bit for bit.
 * Built by benchmarks/bench_twin.py with  gcc -O3 -march=native -shared -fPIC
 * (and -ffp-contract=off so that, like numba without fastmath, no FMA contraction
 * changes the rounding; the default-contraction build is timed as well).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define GOLDEN 0x9E3779B97F4A7C15ULL
#define M1 0xBF58476D1CE4E5B9ULL
#define M2 0x94D049BB133111EBULL

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * M1;
    z = (z ^ (z >> 27)) * M2;
    return z ^ (z >> 31);
}

uint64_t stream_key(uint64_t seed, uint64_t replicate, uint64_t stream)
{
    uint64_t k = mix64(seed + GOLDEN);
    k = mix64(k ^ (replicate * M1 + 1ULL));
    return mix64(k ^ (stream * M2 + GOLDEN));
}

static inline int64_t randint(uint64_t key, uint64_t counter, int64_t n)
{
    uint64_t x = mix64(key + (counter + 1ULL) * GOLDEN);
    double u = (double)(x >> 11) * (1.0 / 9007199254740992.0);
    int64_t r = (int64_t)(u * (double)n);
    return r < n ? r : n - 1;
}

/* One SGD step on the AUC hinge loss at pair (a, b) (rows of X), in place; returns the loss. */
static inline double step_auc_hinge(double *restrict w, const double *restrict xa,
                                    const double *restrict xb, double ya, double yb,
                                    double eta, int64_t d)
{
    double c = 0.5 * (ya - yb);
    if (c == 0.0)
        return 0.0;
    double dot = 0.0;
    for (int64_t j = 0; j < d; j++)
        dot += w[j] * (xa[j] - xb[j]);
    double m = c * dot;
    if (m >= 1.0)
        return 0.0;
    double f = -c;  /* scale * phi'(m) * c with phi'(m) = -1 */
    for (int64_t j = 0; j < d; j++)
        w[j] = w[j] - eta * (f * (xa[j] - xb[j]));
    return 1.0 - m;
}

static inline int project_l2(double *restrict w, int64_t d, double radius)
{
    double s = 0.0;
    for (int64_t j = 0; j < d; j++)
        s += w[j] * w[j];
    if (s > radius * radius) {
        double f = radius / sqrt(s);
        for (int64_t j = 0; j < d; j++)
            w[j] *= f;
        return 1;
    }
    return 0;
}

/* X: (n + m, d) row-major, Y: (n + m).  etas, omegas: (T + 1), index 0 unused.
 * use_l2: 0 = unconstrained.  out: 4*d doubles (w_T, w'_T, output, output').
 * stats: [0] ||w_T - w'_T||, [1] ||out - out'||, [2] sum fhat (on S), [3] sum eta^2 fhat,
 *        [4] projections that were active (both runs), [5] steps with a nonzero gradient (S).
 * Returns 0, or -1 if out of memory. */
int twin_p1(const double *X, const double *Y, int64_t n, int64_t d, int64_t k, int64_t krow,
            uint64_t seed, uint64_t replicate, uint64_t stream, const double *etas,
            const double *omegas, int64_t T, int use_l2, double radius,
            const double *w0, double *out, double *stats)
{
    double *buf = calloc((size_t)(6 * d), sizeof(double));
    if (!buf)
        return -1;
    double *w = buf, *wp = buf + d;        /* w_{t-1}, then w_t (in place) */
    double *w2 = buf + 2 * d, *w2p = buf + 3 * d;  /* w_{t-2} */
    double *acc = buf + 4 * d, *accp = buf + 5 * d;
    memcpy(w, w0, d * sizeof(double));
    memcpy(wp, w0, d * sizeof(double));
    memcpy(w2, w0, d * sizeof(double));
    memcpy(w2p, w0, d * sizeof(double));
    uint64_t key = stream_key(seed, replicate, stream);
    int64_t iprev = randint(key, 0, n);
    double wsum = 0.0, lsum = 0.0, l2sum = 0.0, nproj = 0.0, nactive = 0.0;
    double pend = 0.0, pendp = 0.0;  /* weights not yet added to acc, accp */
    int same = 1, samep = 1;         /* w_{t-2} == w_{t-1}: the last step left w unchanged */
    for (int64_t t = 1; t <= T; t++) {
        int64_t i = randint(key, (uint64_t)t, n);
        int64_t ip = (i == k) ? krow : i, jp = (iprev == k) ? krow : iprev;
        double eta = etas[t], om = omegas[t];
        /* output accumulates w_{t-2} (deferred); then w_{t-2} <- w_{t-1} */
        pend += om;
        pendp += om;
        if (!same) {
            for (int64_t j = 0; j < d; j++) {
                acc[j] += pend * w2[j];
                w2[j] = w[j];
            }
            pend = 0.0;
        }
        if (!samep) {
            for (int64_t j = 0; j < d; j++) {
                accp[j] += pendp * w2p[j];
                w2p[j] = wp[j];
            }
            pendp = 0.0;
        }
        wsum += om;
        double f = step_auc_hinge(w, X + i * d, X + iprev * d, Y[i], Y[iprev], eta, d);
        double fp = step_auc_hinge(wp, X + ip * d, X + jp * d, Y[ip], Y[jp], eta, d);
        same = (f == 0.0);
        samep = (fp == 0.0);
        lsum += f;
        l2sum += eta * eta * f;
        nactive += (f != 0.0);
        if (use_l2) {
            int a = project_l2(w, d, radius), b = project_l2(wp, d, radius);
            nproj += a + b;
            same = same && !a;
            samep = samep && !b;
        }
        iprev = i;
    }
    double s = 0.0, so = 0.0;
    for (int64_t j = 0; j < d; j++) {
        double e = w[j] - wp[j];
        s += e * e;
        double a = pend != 0.0 ? acc[j] + pend * w2[j] : acc[j];
        double ap = pendp != 0.0 ? accp[j] + pendp * w2p[j] : accp[j];
        double eo = (a - ap) / wsum;
        so += eo * eo;
        out[j] = w[j];
        out[d + j] = wp[j];
        out[2 * d + j] = a / wsum;
        out[3 * d + j] = ap / wsum;
    }
    stats[0] = sqrt(s);
    stats[1] = sqrt(so);
    stats[2] = lsum;
    stats[3] = l2sum;
    stats[4] = nproj;
    stats[5] = nactive;
    free(buf);
    return 0;
}
