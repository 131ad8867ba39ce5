/* PolyBench 4.2 jacobi-1d: TSTEPS sweeps of a 3-point stencil. */
int TSTEPS, N;
double A[N], B[N];
#pragma scop
for (t = 0; t < TSTEPS; t++) {
  for (i = 1; i < N - 1; i++)
    B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
  for (i = 1; i < N - 1; i++)
    A[i] = 0.33333 * (B[i - 1] + B[i] + B[i + 1]);
}
#pragma endscop
