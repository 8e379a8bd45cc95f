/*
 After karpathy/llm.c llmc/rand.h (MIT, see ../LICENSE), shortened: the Mersenne Twister state, seeding and a
 random permutation, as torch.manual_seed has them. Host code in a header.
*/
#ifndef RAND_H
#define RAND_H

#include <math.h>

#define MERSENNE_STATE_M 397u
#define MERSENNE_STATE_N 624u

#define LMASK 0x7ffffffful
#define UMASK 0x80000000ul

typedef struct {
    unsigned long long seed_;
    int left_;
    unsigned int next_;
    unsigned int state_[MERSENNE_STATE_N];
    unsigned int MATRIX_A[2];
} mt19937_state;

void manual_seed(mt19937_state* state, unsigned int seed) {
    state->MATRIX_A[0] = 0x0u;
    state->MATRIX_A[1] = 0x9908b0df;
    state->state_[0] = seed & 0xffffffff;
    for (unsigned int j = 1; j < MERSENNE_STATE_N; j++) {
        state->state_[j] = 1812433253 * (state->state_[j - 1] ^ (state->state_[j - 1] >> 30)) + j;
        state->state_[j] &= 0xffffffff;
    }
    state->left_ = 1;
    state->next_ = 0;
}

unsigned int randint32(mt19937_state* state) {
    if (!state) return 0;
    if (--(state->left_) <= 0) {
        state->left_ = MERSENNE_STATE_N;
        state->next_ = 0;
    }
    unsigned int y = state->state_[state->next_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >> 18;
    return y;
}

void init_identity_permutation(int *data, int numel) {
    for (int i = 0; i < numel; i++) {
        data[i] = i;
    }
}

void random_permutation(int* data, int numel, mt19937_state* state) {
    for (int i = numel - 1; i > 0; i--) {
        int j = randint32(state) % (i + 1);
        int tmp = data[i];
        data[i] = data[j];
        data[j] = tmp;
    }
}

#endif
