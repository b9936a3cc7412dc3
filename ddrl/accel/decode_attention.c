/* One decode step of cascade attention over [a row's prompt, its response so far], float32, for
 * ddrl.native_attention (built and loaded there; see that module for why it exists and what it computes).
 *
 * Per row b and query head h (kv head g = h / (H / KV)):
 *   scores  = [q . K_prompt[u, g, :, j] for prompt positions j with valid[u, j]] ++ [q . K_resp[b, g, :, j], j <= t]
 *   out     = softmax(scores * scale) @ [V_prompt; V_resp]
 * with u = group[b] the row's prompt. Before attending, the row's new key and value (k, v at step t) are written
 * into its response cache, as the torch path's cache writes do.
 *
 * Layouts (element strides; the last dimension of q, k, v is contiguous):
 *   q [B, H, D] at q + b*q_sb + h*q_sh; k, v [B, KV, D] likewise (k_sb, k_sh, v_sb, v_sh)
 *   prompt K transposed [U, KV, D, W] and prompt V [U, KV, W, D], contiguous; valid [U, W] (uint8)
 *   response K transposed [rows, KV, D, T] and response V [rows, KV, T, D]: row stride rs, head stride hs
 *   (the same for both), positions 0..t used
 *   out [B, H, D], contiguous
 * Rows are split over the OpenMP threads of the process's runtime (torch's libgomp: the module checks that no
 * second OpenMP runtime is loaded). */
#include <math.h>
#include <stdint.h>
#include <float.h>

#define MAX_W 1024
#define MAX_T 8192
#define MAX_D 512

int ddrl_decode_attention_limits(int64_t *w, int64_t *t, int64_t *d) {
    *w = MAX_W; *t = MAX_T; *d = MAX_D;
    return 1;
}

void ddrl_decode_attention(const float *q, int64_t q_sb, int64_t q_sh,
                           const float *k, int64_t k_sb, int64_t k_sh,
                           const float *v, int64_t v_sb, int64_t v_sh,
                           const float *pkt, const float *pv, const uint8_t *valid, const int64_t *group,
                           float *rkt, float *rv, int64_t rs, int64_t hs, int64_t T,
                           float *out, int64_t B, int64_t H, int64_t KV, int64_t W, int64_t D, int64_t t,
                           float scale) {
    const int64_t rep = H / KV, n = t + 1;
    #pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < B; b++) {
        float sp[MAX_W], sr[MAX_T], acc[MAX_D];
        const int64_t u = group[b];
        for (int64_t g = 0; g < KV; g++) {  /* this step's key and value into the row's cache */
            float *RK = rkt + b * rs + g * hs, *RV = rv + b * rs + g * hs;
            const float *kk = k + b * k_sb + g * k_sh, *vv = v + b * v_sb + g * v_sh;
            for (int64_t d = 0; d < D; d++) {
                RK[d * T + t] = kk[d];
                RV[t * D + d] = vv[d];
            }
        }
        for (int64_t h = 0; h < H; h++) {
            const int64_t g = h / rep;
            const float *qq = q + b * q_sb + h * q_sh;
            const float *PK = pkt + (u * KV + g) * W * D, *PV = pv + (u * KV + g) * W * D;
            const float *RK = rkt + b * rs + g * hs, *RV = rv + b * rs + g * hs;
            const uint8_t *ok = valid + u * W;
            for (int64_t j = 0; j < W; j++) sp[j] = 0.f;
            for (int64_t j = 0; j < n; j++) sr[j] = 0.f;
            for (int64_t d = 0; d < D; d++) {  /* scores: one query element at a time over contiguous positions */
                const float qd = qq[d] * scale;
                const float *kp = PK + d * W, *kr = RK + d * T;
                for (int64_t j = 0; j < W; j++) sp[j] += qd * kp[j];
                for (int64_t j = 0; j < n; j++) sr[j] += qd * kr[j];
            }
            float m = -FLT_MAX;
            for (int64_t j = 0; j < W; j++) if (ok[j] && sp[j] > m) m = sp[j];
            for (int64_t j = 0; j < n; j++) if (sr[j] > m) m = sr[j];
            float z = 0.f;
            for (int64_t j = 0; j < W; j++) { const float e = ok[j] ? expf(sp[j] - m) : 0.f; sp[j] = e; z += e; }
            for (int64_t j = 0; j < n; j++) { const float e = expf(sr[j] - m); sr[j] = e; z += e; }
            for (int64_t d = 0; d < D; d++) acc[d] = 0.f;
            for (int64_t j = 0; j < W; j++) {
                const float p = sp[j];
                const float *vp = PV + j * D;
                for (int64_t d = 0; d < D; d++) acc[d] += p * vp[d];
            }
            for (int64_t j = 0; j < n; j++) {
                const float p = sr[j];
                const float *vp = RV + j * D;
                for (int64_t d = 0; d < D; d++) acc[d] += p * vp[d];
            }
            const float iz = 1.f / z;
            float *o = out + (b * H + h) * D;
            for (int64_t d = 0; d < D; d++) o[d] = acc[d] * iz;
        }
    }
}
