/* PolyBench 4.2 gemm: C := alpha * A * B + beta * C. */
int NI, NJ, NK;
double C[NI][NJ], A[NI][NK], B[NK][NJ], alpha, beta;
#pragma scop
for (i = 0; i < NI; i++) {
  for (j = 0; j < NJ; j++)
    C[i][j] *= beta;
  for (k = 0; k < NK; k++)
    for (j = 0; j < NJ; j++)
      C[i][j] += alpha * A[i][k] * B[k][j];
}
#pragma endscop
