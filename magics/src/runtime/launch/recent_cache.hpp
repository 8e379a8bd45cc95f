#pragma once
// The last N (key, value) pairs remembered, the oldest replaced first: a Kernel keeps its Launchers by
// launch configuration here, so a loop alternating between a few configurations (one per device)
// finds each of its own. Key is a handle type whose empty value converts to false (an empty slot).
// Header-only and inline because a lookup is on the launch path: N comparisons, no allocation.
// Not thread-safe: its owner serialises use (the binding holds the GIL).

#include <cstddef>
#include <utility>

namespace xcuda
{
    template <class Key, class Value, std::size_t N>
    class recent_cache
    {
    public:
        // The value of the first remembered key k for which same(k) is true, or null.
        template <class Same>
        const Value* find(Same same) const
        {
            for (std::size_t i = 0; i < N; ++i)
            {
                if (m_keys[i] && same(m_keys[i]))
                {
                    return &m_values[i];
                }
            }
            return nullptr;
        }

        // Remembers key -> value in place of the oldest pair.
        void remember(Key key, Value value)
        {
            m_keys[m_next] = std::move(key);
            m_values[m_next] = std::move(value);
            m_next = (m_next + 1) % N;
        }

    private:
        Key m_keys[N]{};
        Value m_values[N]{};
        std::size_t m_next = 0;
    };
}
