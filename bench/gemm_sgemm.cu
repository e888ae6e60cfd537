// CUDA C equivalent of kernels/gemm_sgemm.kir: C = A B, f32 on the CUDA cores, A [m, k], B [k, n],
// C [m, n] row-major. Launch grid(n / 64, m / 64) block(256); m, n multiples of 64, k a multiple of
// 16 (at least 16). The same algorithm, instruction for instruction where kir has one: 64 x 64
// block tile, thread t = 16 ty + tx computing the 4 x 4 register block at rows 4 ty, columns 4 tx;
// k-tile 16, two shared stages filled with cp.async.cg 16-byte copies (A tile as in memory, rows
// padded from 16 to 20 floats; B tile unpadded); the tile's 16 k unrolled in groups of 4: four
// float4 loads of A and four of B from shared memory and 64 fmas in increasing k (__fmaf_rn, so NVRTC keeps the chain); C
// written as float4s. cp.async is inline PTX (CUDA C has no operator for it), the instruction kir
// emits for its cp.async ops.
__device__ __forceinline__ unsigned shared_addr(const void* p) {
    unsigned r;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
    return r;
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, 16;" ::"r"(dst), "l"(src) : "memory");
}

extern "C" __global__ void __launch_bounds__(256) gemm_sgemm(const float* a, const float* b, float* c, unsigned m, unsigned n, unsigned k) {
    // 2 stages x 64 rows x 20 floats (16 + 4 padding); 2 stages x 16 rows x 64 floats
    __shared__ __align__(16) float sa[2560];
    __shared__ __align__(16) float sb[2048];
    unsigned tid = threadIdx.x;
    unsigned bm64 = blockIdx.y << 6;
    unsigned bn64 = blockIdx.x << 6;
    unsigned tiles = k >> 4;
    unsigned sa_base = shared_addr(sa);
    unsigned sb_base = shared_addr(sb);
    // copies: A row tid >> 2, floats 4 (tid & 3); B row tid >> 4, floats 4 (tid & 15)
    unsigned ar = tid >> 2, ac = (tid & 3) << 2;
    unsigned sac = ar * 20 + ac;
    unsigned ga = (bm64 + ar) * k + ac;
    unsigned br = tid >> 4, bc = (tid & 15) << 2;
    unsigned sbc = br * 64 + bc;
    unsigned gb = br * n + bn64 + bc;
    unsigned n16 = n << 4;
    unsigned ty4 = (tid >> 4) << 2, tx4 = (tid & 15) << 2;
    unsigned fa = ty4 * 20;

    cp_async16(sa_base + 4 * sac, a + ga);
    cp_async16(sb_base + 4 * sbc, b + gb);
    asm volatile("cp.async.commit_group;" ::: "memory");

    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;

    for (unsigned t = 0; t < tiles; t++) {
        unsigned t1 = t + 1;
        if (t1 < tiles) {
            // k-tile t + 1 into stage (t + 1) & 1
            unsigned nsa = (t1 & 1) * 1280, nsb = (t1 & 1) << 10;
            cp_async16(sa_base + 4 * (sac + nsa), a + ga + (t1 << 4));
            cp_async16(sb_base + 4 * (sbc + nsb), b + gb + t1 * n16);
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group 1;" ::: "memory");  // k-tile t's group is complete
        __syncthreads();
        unsigned pa = fa + (t & 1) * 1280, pb = tx4 + ((t & 1) << 10);
#pragma unroll
        for (unsigned s = 0; s < 4; s++) {  // unrolled, as in the .kir kernel
            float4 va[4], vb[4];
            for (int i = 0; i < 4; i++) va[i] = *reinterpret_cast<const float4*>(sa + pa + (s << 2) + 20 * i);
            for (int l = 0; l < 4; l++) vb[l] = *reinterpret_cast<const float4*>(sb + pb + (s << 8) + 64 * l);
            float av[4][4], bv[4][4];
            for (int i = 0; i < 4; i++) {
                av[i][0] = va[i].x; av[i][1] = va[i].y; av[i][2] = va[i].z; av[i][3] = va[i].w;
                bv[i][0] = vb[i].x; bv[i][1] = vb[i].y; bv[i][2] = vb[i].z; bv[i][3] = vb[i].w;
            }
            for (int l = 0; l < 4; l++)
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++) acc[i][j] = __fmaf_rn(av[i][l], bv[l][j], acc[i][j]);
        }
        __syncthreads();  // step t + 1 overwrites this stage
    }

    unsigned o = (bm64 + ty4) * n + bn64 + tx4;
    for (int i = 0; i < 4; i++)
        *reinterpret_cast<float4*>(c + o + i * n) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
}
