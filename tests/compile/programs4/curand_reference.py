"""cuRAND's device generators in numpy, from their published definitions, for the Monte Carlo programs'
references: XORWOW (Marsaglia's xorshift with a Weyl sequence; curand_init's seed scrambling and its
subsequences 2^67 draws apart, the jump computed here by squaring the generator's 160 x 160 matrix over
GF(2), not from cuRAND's precomputed tables) and Philox4x32-10 (Salmon et al.; the subsequence is the
counter's upper half). curand_uniform maps x to x * 2^-32 + 2^-33 in float."""
import numpy as np

MASK = 0xFFFFFFFF


def _step_matrix():
    """Column j: the XORWOW state v[0..4] after one step from the state with only bit j set."""
    m = np.zeros((160, 160), np.uint8)
    for j in range(160):
        v = [0] * 5
        v[j // 32] = 1 << (j % 32)
        t = v[0] ^ (v[0] >> 2)
        w = [v[1], v[2], v[3], v[4], ((v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1))) & MASK]
        for i in range(160):
            m[i, j] = (w[i // 32] >> (i % 32)) & 1
    return m


def _gf2(a, b):
    return ((a.astype(np.int64) @ b.astype(np.int64)) & 1).astype(np.uint8)


def xorwow_states(seed, count):
    """curand_init(seed, subsequence, 0) for subsequences 0 .. count - 1: (v of shape (count, 5), d)."""
    s0 = (seed & MASK) ^ 0xAAD26B49
    s1 = (seed >> 32) ^ 0xF7DCEFDD
    t0, t1 = (1099087573 * s0) & MASK, (2591861531 * s1) & MASK
    d = (6615241 + t1 + t0) & MASK
    v = [(123456789 + t0) & MASK, 362436069 ^ t0, (521288629 + t1) & MASK, 88675123 ^ t1, (5783321 + t0) & MASK]
    bits = np.array([(v[i // 32] >> (i % 32)) & 1 for i in range(160)], np.uint8)
    jump = _step_matrix()
    for _ in range(67):  # one subsequence: 2^67 steps (d moves by 362437 * 2^67 = 0 mod 2^32)
        jump = _gf2(jump, jump)
    states = np.repeat(bits[:, None], count, axis=1)  # (160, count)
    sequence = np.arange(count)
    for k in range(max(1, int(count - 1).bit_length())):
        chosen = (sequence >> k) & 1 == 1
        if chosen.any():
            states[:, chosen] = _gf2(jump, states[:, chosen])
        jump = _gf2(jump, jump)
    weights = (np.uint64(1) << np.arange(32, dtype=np.uint64))
    words = (states.reshape(5, 32, count).astype(np.uint64) * weights[None, :, None]).sum(axis=1)
    return words.T.astype(np.uint64), d


def xorwow_draws(seed, count, draws):
    """curand() `draws` times from each of `count` subsequences: uint32 of shape (count, draws)."""
    v, d = xorwow_states(seed, count)
    v = [v[:, i].copy() for i in range(5)]
    d = np.uint64(d)
    out = np.empty((count, draws), np.uint32)
    mask = np.uint64(MASK)
    for k in range(draws):
        t = v[0] ^ (v[0] >> np.uint64(2))
        v = [v[1], v[2], v[3], v[4], ((v[4] ^ (v[4] << np.uint64(4))) ^ (t ^ (t << np.uint64(1)))) & mask]
        d = (d + np.uint64(362437)) & mask
        out[:, k] = ((v[4] + d) & mask).astype(np.uint32)
    return out


def uniform(x):
    """_curand_uniform: float(x) * 2^-32 + 2^-33 in float (the product is exact: one rounding, fused or not)."""
    return x.astype(np.float32) * np.float32(2.0 ** -32) + np.float32(2.0 ** -33)


def xorwow_uniform(seed, count, draws):
    return uniform(xorwow_draws(seed, count, draws))


def philox4x32_10(counter, key):
    """Philox4x32-10 on arrays of counters (4, n) and keys (2, n), all uint64 holding 32-bit words."""
    c = [w.astype(np.uint64) for w in counter]
    k0, k1 = key[0].astype(np.uint64), key[1].astype(np.uint64)
    mask = np.uint64(MASK)
    for _ in range(10):
        p0 = c[0] * np.uint64(0xD2511F53)
        p1 = c[2] * np.uint64(0xCD9E8D57)
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & mask, p1 & mask,
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & mask, p0 & mask]
        k0 = (k0 + np.uint64(0x9E3779B9)) & mask
        k1 = (k1 + np.uint64(0xBB67AE85)) & mask
    return c
