// CUDA C equivalent of kernels/gemm_tiled.kir: C = A B, f32, 16 x 16 shared-memory tiles,
// launch grid(ceil(n / 16), ceil(m / 16)) block(16, 16).
extern "C" __global__ void gemm_tiled(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    __shared__ float as[256];
    __shared__ float bs[256];
    unsigned tx = threadIdx.x, ty = threadIdx.y;
    unsigned bx = blockIdx.x, by = blockIdx.y;
    unsigned row = by * 16 + ty;
    unsigned col = bx * 16 + tx;
    unsigned slot = ty * 16 + tx;
    unsigned steps = (k + 15) >> 4;
    bool rowok = row < m;
    bool colok = col < n;
    float acc = 0.0f;
    for (unsigned t = 0; t < steps; t++) {
        unsigned t16 = t << 4;
        unsigned acol = t16 + tx;
        float aval = 0.0f;
        if (rowok & (acol < k)) aval = a[row * k + acol];
        as[slot] = aval;
        unsigned brow = t16 + ty;
        float bval = 0.0f;
        if ((brow < k) & colok) bval = b[brow * n + col];
        bs[slot] = bval;
        __syncthreads();
        unsigned arow = ty << 4;
        for (unsigned q = 0; q < 16; q++) acc = __fmaf_rn(as[arow + q], bs[q * 16 + tx], acc);
        // the next step overwrites both tiles
        __syncthreads();
    }
    if (rowok & colok) c[row * n + col] = acc;
}
