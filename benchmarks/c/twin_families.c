/* Plain-C reference loops for run_all.py: one twin replicate of sgd_pair, p0_alg1 and p4_alg1,
 * the same work as stabsim.kernels.twin.twin_kernel for these schedules (unconstrained,
 * w_0 = 0, constant step size eta, output (1/T) sum_{t=1}^T w_{t-1}):
 *
 *   sgd_pair  (UNIFORM_PAIR): (i, j) = pair_ij(key, t, n), AUC hinge loss;
 *   p0_alg1   (ALL_PREV):     i_0 = randint(key, 0, n); step t draws i_t = randint(key, t, n)
 *                             and averages the AUC-hinge gradient over the pairs (i_t, i_k), k < t;
 *   p4_alg1   (POINTWISE):    i = randint(key, t, n), logistic loss phi(y w.x), Gaussian noise
 *                             sigma * normal(key_noise, t d + c) shared by S and S'.
 *
 * S' reads row krow instead of row k.  Random numbers: SplitMix64 counter-based, as
 * stabsim.rng (same keys and counters), so the results agree with the kernel.
 * Built by run_all.py with  gcc -O3 -march=native -ffp-contract=off -shared -fPIC.
 * stats: [0] ||w_T - w'_T||, [1] ||out - out'||, [2] sum of the step losses on S.
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

static uint64_t skey(uint64_t seed, uint64_t replicate, uint64_t stream)
{
    uint64_t k = mix64(seed + GOLDEN);
    k = mix64(k ^ (replicate * M1 + 1ULL));
    return mix64(k ^ (stream * M2 + GOLDEN));
}

static inline double uniform(uint64_t key, uint64_t counter)
{
    uint64_t x = mix64(key + (counter + 1ULL) * GOLDEN);
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

static inline int64_t randint(uint64_t key, uint64_t counter, int64_t n)
{
    int64_t r = (int64_t)(uniform(key, counter) * (double)n);
    return r < n ? r : n - 1;
}

static inline double normal(uint64_t key, uint64_t counter)
{
    double u1 = 1.0 - uniform(key, 2 * counter);
    double u2 = uniform(key, 2 * counter + 1);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* g += f * grad of the AUC hinge loss at rows (a, b); returns the loss */
static inline double auc_hinge(const double *restrict w, const double *X, const double *Y,
                               int64_t a, int64_t b, int64_t d, double f, double *restrict g)
{
    double c = 0.5 * (Y[a] - Y[b]);
    if (c == 0.0)
        return 0.0;
    const double *xa = X + a * d, *xb = X + b * d;
    double dot = 0.0;
    for (int64_t j = 0; j < d; j++)
        dot += w[j] * (xa[j] - xb[j]);
    double m = c * dot;
    if (m >= 1.0)
        return 0.0;
    double e = f * (-c);
    for (int64_t j = 0; j < d; j++)
        g[j] += e * (xa[j] - xb[j]);
    return 1.0 - m;
}

static void finish(const double *w, const double *wp, const double *acc, const double *accp,
                   double wsum, int64_t d, double lsum, double *stats)
{
    double s = 0.0, so = 0.0;
    for (int64_t j = 0; j < d; j++) {
        double e = w[j] - wp[j];
        s += e * e;
        double eo = (acc[j] - accp[j]) / wsum;
        so += eo * eo;
    }
    stats[0] = sqrt(s);
    stats[1] = sqrt(so);
    stats[2] = lsum;
}

#define ROW(i) (((i) == k) ? krow : (i))

/* family: 0 = sgd_pair, 1 = p0_alg1, 2 = p4_alg1.  Returns 0, or -1 if out of memory. */
int twin_family(int family, const double *X, const double *Y, int64_t n, int64_t d, int64_t k,
                int64_t krow, uint64_t seed, uint64_t replicate, double eta, int64_t T,
                double sigma, double *stats)
{
    double *buf = calloc((size_t)(6 * d), sizeof(double));
    int64_t *hist = family == 1 ? malloc((size_t)(T + 1) * sizeof(int64_t)) : NULL;
    if (!buf || (family == 1 && !hist)) {
        free(buf);
        free(hist);
        return -1;
    }
    double *w = buf, *wp = buf + d, *g = buf + 2 * d, *gp = buf + 3 * d;
    double *acc = buf + 4 * d, *accp = buf + 5 * d;
    uint64_t key = skey(seed, replicate, 1), keyn = skey(seed, replicate, 2);
    double lsum = 0.0;
    if (family == 1)
        hist[0] = randint(key, 0, n);
    for (int64_t t = 1; t <= T; t++) {
        memset(g, 0, d * sizeof(double));
        memset(gp, 0, d * sizeof(double));
        if (family == 0) {
            int64_t i = randint(key, 2 * t, n);
            int64_t j = randint(key, 2 * t + 1, n - 1);
            if (j >= i)
                j++;
            lsum += auc_hinge(w, X, Y, i, j, d, 1.0, g);
            auc_hinge(wp, X, Y, ROW(i), ROW(j), d, 1.0, gp);
        } else if (family == 1) {
            int64_t a = randint(key, t, n);
            hist[t] = a;
            double sc = 1.0 / t, tot = 0.0;
            for (int64_t q = 0; q < t; q++) {
                int64_t b = hist[q];
                tot += auc_hinge(w, X, Y, a, b, d, sc, g);
                auc_hinge(wp, X, Y, ROW(a), ROW(b), d, sc, gp);
            }
            lsum += tot / t;
        } else {
            int64_t i = randint(key, t, n);
            for (int run = 0; run < 2; run++) {
                int64_t r = run ? ROW(i) : i;
                const double *x = X + r * d, *ww = run ? wp : w;
                double *gg = run ? gp : g;
                double dot = 0.0;
                for (int64_t j = 0; j < d; j++)
                    dot += ww[j] * x[j];
                double m = Y[r] * dot, val, dphi;
                if (m >= 0.0) {
                    double e = exp(-m);
                    val = log1p(e);
                    dphi = -e / (1.0 + e);
                } else {
                    double e = exp(m);
                    val = -m + log1p(e);
                    dphi = -1.0 / (1.0 + e);
                }
                double f = dphi * Y[r];
                if (f != 0.0)
                    for (int64_t j = 0; j < d; j++)
                        gg[j] += f * x[j];
                if (!run)
                    lsum += val;
            }
            if (sigma > 0.0)
                for (int64_t j = 0; j < d; j++) {
                    double z = sigma * normal(keyn, (uint64_t)(t * d + j));
                    g[j] += z;
                    gp[j] += z;
                }
        }
        for (int64_t j = 0; j < d; j++) {   /* output: mean of w_{t-1} */
            acc[j] += w[j];
            accp[j] += wp[j];
        }
        for (int64_t j = 0; j < d; j++) {
            w[j] -= eta * g[j];
            wp[j] -= eta * gp[j];
        }
    }
    finish(w, wp, acc, accp, (double)T, d, lsum, stats);
    free(buf);
    free(hist);
    return 0;
}
