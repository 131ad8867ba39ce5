/* PolyBench 4.2 lu: LU decomposition without pivoting, in place. */
int N;
double A[N][N];
#pragma scop
for (i = 0; i < N; i++) {
  for (j = 0; j < i; j++) {
    for (k = 0; k < j; k++)
      A[i][j] -= A[i][k] * A[k][j];
    A[i][j] /= A[j][j];
  }
  for (j = i; j < N; j++)
    for (k = 0; k < i; k++)
      A[i][j] -= A[i][k] * A[k][j];
}
#pragma endscop
