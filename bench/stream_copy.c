/* STREAM-style copy and triad bandwidths, for comparing SpMV's achieved bandwidth with what
 * the memory system delivers on plain streaming loops, at the thread count of
 * OMP_NUM_THREADS.
 *
 *   gcc -O3 -march=native -fopenmp bench/stream_copy.c -o stream_copy
 *   OMP_NUM_THREADS=2 ./stream_copy [LOG2_ELEMENTS] [REPEATS]
 *
 * Copies b[i] = a[i], then computes the triad a[i] = b[i] + s * c[i], over 2^26 doubles
 * (512 MiB per array; LOG2_ELEMENTS changes it) REPEATS times each (default 10) after one
 * untimed pass, and prints the best rates, counting 16 bytes per element for the copy and
 * 24 for the triad (the STREAM convention: reads and writes, no write-allocate):
 *
 *   threads 2 elements 67108864 best_copy_gbps 23.456 best_triad_gbps 25.678
 *
 * Both arrays are first touched by the same static schedule as the copy, so pages land
 * near the threads that use them.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int log2n = argc > 1 ? atoi(argv[1]) : 26;
    int repeats = argc > 2 ? atoi(argv[2]) : 10;
    if (log2n < 10 || log2n > 34 || repeats < 1) {
        fprintf(stderr, "usage: %s [LOG2_ELEMENTS in 10..34] [REPEATS >= 1]\n", argv[0]);
        return 2;
    }
    long n = 1L << log2n;
    double *a = malloc(n * sizeof *a);
    double *b = malloc(n * sizeof *b);
    double *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory for 3 x %ld doubles\n", n);
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        a[i] = (double)(i % 1000) * 0.5;
        b[i] = 0.0;
        c[i] = 1.0;
    }
    double best = 1e30;
    for (int r = 0; r <= repeats; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            b[i] = a[i];
        double t = omp_get_wtime() - t0;
        if (r > 0 && t < best) /* pass 0 is the warm-up */
            best = t;
    }
    double best_triad = 1e30;
    const double scalar = 3.0;
    for (int r = 0; r <= repeats; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++)
            a[i] = b[i] + scalar * c[i];
        double t = omp_get_wtime() - t0;
        if (r > 0 && t < best_triad)
            best_triad = t;
    }
    /* Use the results so the loops cannot be dropped. */
    double check = 0.0;
    for (long i = 0; i < n; i += 4096)
        check += a[i] + b[i];
    if (check < 0.0)
        printf("impossible %f\n", check);
    printf("threads %d elements %ld best_copy_gbps %.3f best_triad_gbps %.3f\n",
           omp_get_max_threads(), n, 2.0 * sizeof(double) * (double)n / best / 1e9,
           3.0 * sizeof(double) * (double)n / best_triad / 1e9);
    free(a);
    free(b);
    free(c);
    return 0;
}
