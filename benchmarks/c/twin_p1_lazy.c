/* Lazy-sum C comparator for the stabsim benchmark: P1 Algorithm 1 twin run.
 *
 * An independent, plainly written C loop of the same twin step as benchmarks/c/twin_p1.c and
 * stabsim's P1 Alg. 1 kernel (pair i_t with i_{t-1}, AUC hinge loss, optional l2-ball
 * projection, run on S and on S' in lockstep with the same index draws, S' reading row krow
 * instead of row k), but with the textbook lazy running sum of averaged SGD for the output
 *
 *     A_T = sum_{t=1}^T om_t w_{t-2} / W_T,   W_m = om_1 + ... + om_m,   w_{-1} = w_0.
 *
 * Write w_t = w_0 + delta_1 + ... + delta_t.  Then delta_r enters w_{t-2} for t >= r + 2, so
 *
 *     sum_t om_t w_{t-2} = W_T w_T - sum_{r=1}^T c_r delta_r,   c_r = W_{min(r+1, T)}
 *
 * (exact in real arithmetic).  The loop keeps u = sum_r c_r delta_r and adds to it only when
 * w moves (an active hinge or an active projection: about a tenth of the steps here); there is
 * no copy of w_{t-2}, no per-step work on the output, and A_T = (W_T w_T - u) / W_T at the end.
 * delta_r is taken as the difference of the stored iterates (w_new - w_old), so the identity
 * holds up to the rounding of these differences, of c_r delta_r and of the sums.  This sums differently
 * from the kernel's deferred sum, so ||A_T - A'_T|| agrees with run_twin to rounding only;
 * the iterates, ||w_T - w'_T|| and the losses are computed by the same expressions in the same
 * order as in twin_p1.c, so without FMA contraction they are the kernel's bit for bit.
 *
 * The rest is written the obvious way: a step function per run, in-place update, no draw ahead,
 * no fusing of the two runs' margins, no precomputed differences.  Same SplitMix64 counter
 * generator as stabsim.rng.  Built by benchmarks/bench_lazy_c.py with
 *     gcc -O3 -march=native -ffp-contract=off -shared -fPIC   (no FMA: the reference build)
 *     gcc -O3 -march=native -shared -fPIC                     (GCC's default: a*b+c contracted to FMA)
 *     gcc -O3 -march=native -ffast-math -shared -fPIC         (for information: reassociated sums)
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

uint64_t lazy_stream_key(uint64_t seed, uint64_t replicate, uint64_t stream)
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

/* One SGD step on the AUC hinge loss at the pair (xa, xb), in place; u += coef * (w_new - w_old).
 * Returns the loss (0 when the gradient is zero and w does not move). */
static inline double step_lazy(double *restrict w, double *restrict u, const double *restrict xa,
                               const double *restrict xb, double ya, double yb, double eta,
                               double coef, int64_t d)
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
    double f = -c;  /* phi'(m) * c with phi'(m) = -1 */
    for (int64_t j = 0; j < d; j++) {
        double wn = w[j] - eta * (f * (xa[j] - xb[j]));
        u[j] += coef * (wn - w[j]);
        w[j] = wn;
    }
    return 1.0 - m;
}

/* Projection onto the l2 ball, in place, with the same bookkeeping; returns 1 if active. */
static inline int project_lazy(double *restrict w, double *restrict u, int64_t d, double radius,
                               double coef)
{
    double s = 0.0;
    for (int64_t j = 0; j < d; j++)
        s += w[j] * w[j];
    if (s > radius * radius) {
        double f = radius / sqrt(s);
        for (int64_t j = 0; j < d; j++) {
            double wn = w[j] * f;
            u[j] += coef * (wn - w[j]);
            w[j] = wn;
        }
        return 1;
    }
    return 0;
}

/* Same arguments and results as twin_p1 in twin_p1.c:
 * X: (n + m, d) row-major, Y: (n + m).  etas, omegas: (T + 1), index 0 unused.
 * use_l2: 0 = unconstrained.  out: 4*d doubles (w_T, w'_T, A_T, A'_T).
 * stats: [0] ||w_T - w'_T||, [1] ||A_T - A'_T||, [2] sum fhat (on S), [3] sum eta^2 fhat,
 *        [4] projections that were active (both runs), [5] steps with a nonzero gradient (S).
 * Returns 0, or -1 if out of memory. */
int twin_p1_lazy(const double *X, const double *Y, int64_t n, int64_t d, int64_t k, int64_t krow,
                 uint64_t seed, uint64_t replicate, uint64_t stream, const double *etas,
                 const double *omegas, int64_t T, int use_l2, double radius,
                 const double *w0, double *out, double *stats)
{
    double *buf = calloc((size_t)(4 * d), sizeof(double));
    if (!buf)
        return -1;
    double *w = buf, *wp = buf + d, *u = buf + 2 * d, *up = buf + 3 * d;
    memcpy(w, w0, d * sizeof(double));
    memcpy(wp, w0, d * sizeof(double));
    uint64_t key = lazy_stream_key(seed, replicate, stream);
    int64_t iprev = randint(key, 0, n);
    double W = 0.0, lsum = 0.0, l2sum = 0.0, nproj = 0.0, nactive = 0.0;
    for (int64_t t = 1; t <= T; t++) {
        int64_t i = randint(key, (uint64_t)t, n);
        int64_t ip = (i == k) ? krow : i, jp = (iprev == k) ? krow : iprev;
        double eta = etas[t];
        W += omegas[t];                                  /* W_t */
        double coef = (t < T) ? W + omegas[t + 1] : W;   /* c_t = W_{min(t+1, T)} */
        double f = step_lazy(w, u, X + i * d, X + iprev * d, Y[i], Y[iprev], eta, coef, d);
        (void)step_lazy(wp, up, X + ip * d, X + jp * d, Y[ip], Y[jp], eta, coef, d);
        lsum += f;
        l2sum += eta * eta * f;
        nactive += (f != 0.0);
        if (use_l2)
            nproj += project_lazy(w, u, d, radius, coef) + project_lazy(wp, up, d, radius, coef);
        iprev = i;
    }
    double s = 0.0, so = 0.0;
    for (int64_t j = 0; j < d; j++) {
        double e = w[j] - wp[j];
        s += e * e;
        double a = W * w[j] - u[j], ap = W * wp[j] - up[j];
        double eo = (a - ap) / W;
        so += eo * eo;
        out[j] = w[j];
        out[d + j] = wp[j];
        out[2 * d + j] = a / W;
        out[3 * d + j] = ap / W;
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
