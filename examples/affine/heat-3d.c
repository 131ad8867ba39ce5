/* PolyBench 4.2 heat-3d: TSTEPS sweeps of a 7-point heat stencil. */
int TSTEPS, N;
double A[N][N][N], B[N][N][N];
#pragma scop
for (t = 1; t <= TSTEPS; t++) {
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      for (k = 1; k < N - 1; k++)
        B[i][j][k] = 0.125 * (A[i + 1][j][k] - 2.0 * A[i][j][k] + A[i - 1][j][k])
                   + 0.125 * (A[i][j + 1][k] - 2.0 * A[i][j][k] + A[i][j - 1][k])
                   + 0.125 * (A[i][j][k + 1] - 2.0 * A[i][j][k] + A[i][j][k - 1])
                   + A[i][j][k];
  for (i = 1; i < N - 1; i++)
    for (j = 1; j < N - 1; j++)
      for (k = 1; k < N - 1; k++)
        A[i][j][k] = 0.125 * (B[i + 1][j][k] - 2.0 * B[i][j][k] + B[i - 1][j][k])
                   + 0.125 * (B[i][j + 1][k] - 2.0 * B[i][j][k] + B[i][j - 1][k])
                   + 0.125 * (B[i][j][k + 1] - 2.0 * B[i][j][k] + B[i][j][k - 1])
                   + B[i][j][k];
}
#pragma endscop
