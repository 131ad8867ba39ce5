/* STREAM-style copy bandwidth, for comparing SpMV's achieved bandwidth with what the
 * memory system delivers on a plain streaming copy, at the thread count of OMP_NUM_THREADS.
 *
 *   gcc -O3 -march=native -fopenmp bench/stream_copy.c -o stream_copy
 *   OMP_NUM_THREADS=2 ./stream_copy [LOG2_ELEMENTS] [REPEATS]
 *
 * Copies b[i] = a[i] over 2^26 doubles (512 MiB per array; LOG2_ELEMENTS changes it)
 * REPEATS times (default 10) after one untimed pass, and prints the best rate, counting
 * 16 bytes per element (one read, one write: the STREAM convention, no write-allocate):
 *
 *   threads 2 elements 67108864 best_copy_gbps 23.456
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
    if (!a || !b) {
        fprintf(stderr, "out of memory for 2 x %ld doubles\n", n);
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        a[i] = (double)(i % 1000) * 0.5;
        b[i] = 0.0;
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
    /* Use the result so the copy cannot be dropped. */
    double check = 0.0;
    for (long i = 0; i < n; i += 4096)
        check += b[i];
    if (check < 0.0)
        printf("impossible %f\n", check);
    printf("threads %d elements %ld best_copy_gbps %.3f\n", omp_get_max_threads(), n,
           2.0 * sizeof(double) * (double)n / best / 1e9);
    free(a);
    free(b);
    return 0;
}
